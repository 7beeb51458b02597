"""Scorers compared on the same QA questions (qa/compare.py and scripts/qa_compare.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from presentation_dependence.qa.compare import compare_qa, render_comparison

ROOT = Path(__file__).resolve().parents[2]


def _metrics(flips: dict[str, float], f1: float = 0.5) -> dict:
    per_query = {
        q: {"ndcg_mean": 0.5, "tau_psi": 0.5 * flip, "answer_flip": flip, "f1": f1, "em": 0.0}
        for q, flip in flips.items()
    }
    return {"variants": {"random_shuffle": {"num_presentations": 5, "per_query": per_query}}}


def test_paired_difference_and_exclusion():
    base = _metrics({"a": 1.0, "b": 1.0, "c": 0.0, "d": 1.0})
    student = _metrics({"a": 0.0, "b": 1.0, "c": 0.0, "d": 0.0, "e": 1.0}, f1=0.6)
    out = compare_qa({"off": base, "student": student}, exclude=frozenset({"d"}), n_resamples=200)
    # common questions minus the excluded one: a, b, c ("e" is not in the reference)
    assert out["num_questions"] == 3 and out["excluded"] == ["d"]
    flip = out["scorers"]["student"]["vs_reference"]["answer_flip"]
    assert flip["mean_diff"] == pytest.approx(-1 / 3)
    assert out["scorers"]["student"]["vs_reference"]["f1"]["mean_diff"] == pytest.approx(0.1)
    assert out["scorers"]["off"]["summary"]["answer_flip"]["mean"] == pytest.approx(2 / 3)
    assert "vs_reference" not in out["scorers"]["off"]
    md = render_comparison(out)
    assert "| student | 5 |" in md and "-0.333" in md


def test_compare_refuses_no_overlap_and_unknown_variant():
    with pytest.raises(ValueError, match="share no question"):
        compare_qa({"x": _metrics({"a": 1.0}), "y": _metrics({"b": 1.0})})
    with pytest.raises(ValueError, match="no variant"):
        compare_qa({"x": _metrics({"a": 1.0})}, variant="reverse")


def test_script_splices_doc_and_reads_exclusions(tmp_path):
    for label, flips in (("off", {"a": 1.0, "b": 0.0}), ("st", {"a": 0.0, "b": 0.0})):
        (tmp_path / label / "qa").mkdir(parents=True)
        (tmp_path / label / "qa" / "qa_metrics.json").write_text(json.dumps(_metrics(flips)))
    fixture = tmp_path / "train.jsonl"
    fixture.write_text(json.dumps({"qid": "b", "query": "q", "candidates": []}) + "\n")
    doc = tmp_path / "QA.md"
    doc.write_text("x\n<!-- qa-variants:start -->\nold\n<!-- qa-variants:end -->\ny\n")
    cmd = [
        sys.executable,
        str(ROOT / "scripts" / "qa_compare.py"),
        f"off={tmp_path / 'off'}",
        f"st={tmp_path / 'st'}",
        "--exclude-from",
        str(fixture),
        "--doc",
        str(doc),
    ]
    subprocess.run(cmd, check=True, capture_output=True)
    text = doc.read_text()
    assert "old" not in text and "1 questions (1 excluded)" in text and text.endswith("y\n")
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    cmd[cmd.index(str(fixture))] = str(bad)
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 2 and f"{bad}:1" in r.stderr
