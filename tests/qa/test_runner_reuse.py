"""Issue 16 (1, 4): QA reuses a question only for the input it was answered from; a failed
start does not poison the folder. A fake reader: no model."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from presentation_dependence.config import load_experiment_config
from presentation_dependence.errors import PresdepError
from presentation_dependence.qa.reader import ReaderAnswer
from presentation_dependence.qa.runner import QARunner

from .test_runner import _hotpot


class FakeReader:
    """Answers with the first word of the first paragraph."""

    def read(self, question: str, paragraphs: Sequence[str]) -> ReaderAnswer:
        word = paragraphs[0].split()[0] if paragraphs else ""
        digest = hashlib.sha256((question + "\n".join(paragraphs)).encode()).hexdigest()
        return ReaderAnswer(digest, word, word, word.lower(), False, 10, 1)

    def describe(self) -> dict[str, Any]:
        return {"reader": "fake"}


def _config(tmp: Path, **data: Any) -> Path:
    reader = tmp / "fake-reader.yaml"
    reader.write_text(yaml.safe_dump({"model_name": "unused"}), encoding="utf-8")
    body = {
        "reranker": {"reranker_class": "IdentityReranker"},
        "data": {"dataloader_class": "HotpotQALoader", "path": str(tmp / "hq.jsonl"), **data},
        "robustness": {
            "perturbations": ["random_shuffle"],
            "num_presentations": 2,
            "null_repeats": 2,
            "bootstrap_resamples": 100,
        },
        "qa": {"reader": str(reader), "retain_top_k": 2},
    }
    path = tmp / "qa.yaml"
    path.write_text(yaml.safe_dump(body), encoding="utf-8")
    return path


def _runner(cfg_path: Path, run: Path, **kw: Any) -> QARunner:
    return QARunner(load_experiment_config(cfg_path), run, reader=FakeReader(), **kw)


def test_changed_question_is_refused_or_recomputed(tmp_path: Path) -> None:
    data = _hotpot(tmp_path / "hq.jsonl")
    cfg = _config(tmp_path)
    assert _runner(cfg, tmp_path / "run").run() is not None
    rows = [json.loads(x) for x in data.read_text().splitlines()]
    rows[2]["question_text"] = "A different question?"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(PresdepError, match=r"'hq2'.*query text"):
        _runner(cfg, tmp_path / "run").run()
    again = _runner(cfg, tmp_path / "run", recompute_changed=True).run()
    fresh = _runner(cfg, tmp_path / "fresh").run()
    assert again is not None and fresh is not None
    assert again["variants"] == fresh["variants"]


def test_a_failed_start_leaves_the_folder_usable(tmp_path: Path) -> None:
    """A typo in data.split/data.path fails before the config is frozen (issue 16, 4)."""
    _hotpot(tmp_path / "hq.jsonl")
    run = tmp_path / "run"
    bad = _config(tmp_path)
    typo = load_experiment_config(bad, ["data.path=/nonexistent/hq.jsonl"])
    with pytest.raises(PresdepError):
        QARunner(typo, run, reader=FakeReader()).run()
    assert not (run / "resolved_config.yaml").exists()
    assert _runner(bad, run).run() is not None
