"""What a student's and a trained judge's training config share: a run folder, a frozen copy.

:class:`RunFolderConfig` gives a config dataclass its ``resolved_output_dir`` (``output_dir``,
else ``<runs_dir>/<id>``) and the plain dict and YAML its run folder freezes
(``resolved_config.yaml``); :func:`build_run_config` and :func:`load_run_config` build one from a
raw mapping under an id, or from a YAML file whose stem is its id (:mod:`.config`,
:mod:`.judge_config`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import yaml

from presentation_dependence.config.loader import load_config
from presentation_dependence.errors import ConfigError
from presentation_dependence.fields import build_dataclass, to_plain

__all__ = ["RunFolderConfig", "build_run_config", "load_run_config"]

C = TypeVar("C")


class RunFolderConfig:
    """A training config with a run folder (mixed into a frozen config dataclass whose fields
    include ``id`` and ``output_dir``): ``runs_dir`` and ``default_id`` name the folder an
    empty ``output_dir`` means."""

    id: str
    output_dir: str
    runs_dir: ClassVar[str]
    default_id: ClassVar[str]

    @property
    def resolved_output_dir(self) -> Path:
        return Path(self.output_dir or f"{self.runs_dir}/{self.id or self.default_id}")

    def to_plain(self) -> dict[str, Any]:
        d: dict[str, Any] = to_plain(self)
        d["output_dir"] = str(self.resolved_output_dir)
        return d

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_plain(), sort_keys=False, allow_unicode=True)


def build_run_config(cls: type[C], raw: Mapping[str, Any], config_id: str) -> C:
    """``cls`` built strictly from ``raw``, its ``id`` ``config_id`` unless ``raw`` names one."""
    raw = dict(raw)
    raw.setdefault("id", config_id)
    return build_dataclass(cls, raw)


def load_run_config(
    path: str | Path,
    from_raw: Callable[[dict[str, Any], str], C],
    *,
    family: str,
    overrides: Sequence[str] = (),
    hint: str = "",
) -> C:
    """``from_raw(raw, stem)`` of ``path`` (safe YAML) after the ``family``'s environment then
    ``overrides`` (:func:`~presentation_dependence.config.loader.load_config`); an ``id`` in
    the file must be its stem."""

    def build(raw: dict[str, Any], stem: str) -> C:
        if "id" in raw and raw["id"] != stem:
            raise ConfigError(f"the config's id {raw['id']!r} differs from its file name")
        return from_raw(raw, stem)

    return load_config(path, build, family=family, overrides=overrides, hint=hint)
