"""Fixtures of the CLI tests: the scripts kept as shims, and finished PSI run folders."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from presentation_dependence.cli import main
from presentation_dependence.data.smoke import build_smoke_fixture

REPO = Path(__file__).resolve().parents[2]


def load_script(rel: str) -> ModuleType:
    """``scripts/...py`` as a module (its ``main`` is the shim of a presdep subcommand)."""
    spec = importlib.util.spec_from_file_location(Path(rel).stem, REPO / rel)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def files_under(folder: Path) -> list[str]:
    """The relative paths of the files under ``folder``, sorted."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


@pytest.fixture(scope="session")
def psi_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``off-the-shelf/`` and ``oc-sft/``: run folders (run --eval, then psi) of the
    IdentityReranker on the smoke fixture, as a study lays out its scorers."""
    root = tmp_path_factory.mktemp("psi-runs")
    fixture = build_smoke_fixture(root / "data")
    cfg = root / "identity.yaml"
    cfg.write_text(
        yaml.safe_dump(
            {
                "reranker": {"reranker_class": "IdentityReranker"},
                "data": {"dataloader_class": "FixtureLoader", "path": str(fixture), "top_k": 6},
                "robustness": {
                    "num_presentations": 3,
                    "null_repeats": 2,
                    "bootstrap_resamples": 100,
                },
            }
        )
    )
    runs = root / "dl19"
    first = runs / "off-the-shelf"
    assert main(["run", str(cfg), "--run-dir", str(first), "--eval"]) == 0
    assert main(["psi", str(cfg), "--run-dir", str(first)]) == 0
    shutil.copytree(first, runs / "oc-sft")
    return runs
