"""The configs and the NovelEval fixture that ship inside the wheel (``presdep init``).

A wheel carries ``configs/`` and ``fixtures/`` under ``presentation_dependence/_data/`` (see
``[tool.hatch.build.targets.wheel.force-include]`` in pyproject.toml); a source checkout (an
editable install) has them at the repository root. :func:`data_root` finds whichever is there, so
``presdep init DIR`` writes ``DIR/configs`` and ``DIR/fixtures`` and the main job then runs from
``DIR`` exactly as from a checkout::

    presdep init work && cd work
    presdep run configs/experiments/example-noveleval-smollm2.yaml --eval
"""

from __future__ import annotations

import shutil
from pathlib import Path

from presentation_dependence.errors import PresdepError

__all__ = ["SHIPPED", "data_root", "init_project", "shipped_configs_dir"]

SHIPPED = ("configs", "fixtures")


def data_root() -> Path:
    """The folder holding ``configs/`` and ``fixtures/``: the wheel's ``_data`` or the checkout."""
    here = Path(__file__).resolve().parent
    for root in (here / "_data", here.parents[1]):
        if (
            all((root / d).is_dir() for d in SHIPPED)
            and (root / "configs" / "experiments").is_dir()
        ):
            return root
    raise PresdepError(
        f"no configs or fixtures found beside {here}: this installation carries neither "
        "(reinstall the wheel, or work in a checkout of the repository)"
    )


def shipped_configs_dir() -> Path:
    """``configs/experiments`` of the installation."""
    return data_root() / "configs" / "experiments"


def init_project(dest: str | Path, *, force: bool = False) -> list[Path]:
    """Copy ``configs/`` and ``fixtures/`` into ``dest``; refuse to overwrite unless ``force``."""
    dest = Path(dest)
    root = data_root()
    if dest.resolve() == root.resolve():
        raise PresdepError(f"{dest} is where the configs already are")
    clashes = [dest / d for d in SHIPPED if (dest / d).exists()]
    if clashes and not force:
        raise PresdepError(
            f"{', '.join(map(str, clashes))} already exist; pass --force to overwrite them, or "
            "choose another folder"
        )
    written = []
    for d in SHIPPED:
        shutil.copytree(root / d, dest / d, dirs_exist_ok=True)
        written.append(dest / d)
    return written
