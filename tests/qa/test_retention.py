"""The qa block: validation, and which paragraphs reach the reader (no model needed)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from presentation_dependence.config import load_experiment_config
from presentation_dependence.config.qa_config import QAConfig
from presentation_dependence.errors import ConfigError
from presentation_dependence.qa.runner import QARunner


def test_qa_config_validation() -> None:
    assert QAConfig().retention == "top-2"
    assert QAConfig(retain_top_k=None, retain_threshold=1.5).retention == "score >= 1.5"
    with pytest.raises(ConfigError, match="exactly one"):
        QAConfig(retain_top_k=2, retain_threshold=1.0)
    with pytest.raises(ConfigError, match="exactly one"):
        QAConfig(retain_top_k=None)
    with pytest.raises(ConfigError, match=">= 1"):
        QAConfig(retain_top_k=0)


@pytest.fixture()
def cfg_path(tmp_path: Path) -> Path:
    reader = tmp_path / "r.yaml"
    reader.write_text("model_name: never-loaded\n", encoding="utf-8")
    path = tmp_path / "qa.yaml"
    body = {"data": {"dataloader_class": "HotpotQALoader"}, "qa": {"reader": str(reader)}}
    path.write_text(yaml.safe_dump(body), encoding="utf-8")
    return path


def _retain(cfg_path: Path, tmp_path: Path, *overrides: str) -> list[int]:
    cfg = load_experiment_config(cfg_path, list(overrides))
    scores = np.array([0.5, 2.0, 1.0, 2.0, 0.1])
    return QARunner(cfg, tmp_path / "run")._retain(scores)


def test_retain_top_k_first_stage_order(cfg_path: Path, tmp_path: Path) -> None:
    assert _retain(cfg_path, tmp_path) == [1, 3]  # the two 2.0s
    assert _retain(cfg_path, tmp_path, "qa.retain_top_k=3") == [1, 2, 3]
    assert _retain(cfg_path, tmp_path, "qa.retain_top_k=3", "qa.reader_order=rank") == [1, 3, 2]
    assert _retain(cfg_path, tmp_path, "qa.retain_top_k=9") == [0, 1, 2, 3, 4]


def test_retain_threshold(cfg_path: Path, tmp_path: Path) -> None:
    thr = ["qa.retain_top_k=null"]
    assert _retain(cfg_path, tmp_path, *thr, "qa.retain_threshold=1.0") == [1, 2, 3]  # inclusive
    assert _retain(cfg_path, tmp_path, *thr, "qa.retain_threshold=9") == []
    got = _retain(cfg_path, tmp_path, *thr, "qa.retain_threshold=0.5", "qa.reader_order=rank")
    assert got == [1, 3, 2, 0]
