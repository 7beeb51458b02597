"""``studies/archive.py`` and ``presdep study archive``: a run folder's summary, kept by git."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from presentation_dependence.cli import main
from presentation_dependence.errors import ConfigError
from presentation_dependence.studies.archive import archive_summaries, archive_summary
from presentation_dependence.studies.table import study_table
from tests.training.conftest import fake_run


def _run_folder(folder: Path, ndcg: float, tau: float) -> Path:
    fake_run(folder, ndcg, tau=tau, spread=0.3)
    (folder / "resolved_config.yaml").write_text("reranker:\n  reranker_class: GradeReranker\n")
    (folder / "per_query_results").mkdir()
    (folder / "per_query_results" / "q1.json").write_text(json.dumps({"text": "a passage"}))
    (folder / "psi" / "per_query").mkdir()
    (folder / "psi" / "per_query" / "q1.npz").write_bytes(b"scores")
    return folder


def test_archive_keeps_the_summary_files_only_and_the_table_renders_the_same(tmp_path) -> None:
    runs = tmp_path / "runs"
    folders = [
        _run_folder(runs / "off-the-shelf", 0.4, 0.5),
        _run_folder(runs / "oc-sft", 0.45, 0.2),
    ]
    kept = tmp_path / "docs" / "dl19"
    written = archive_summaries(folders, kept)
    copied = sorted(p.relative_to(kept).as_posix() for p in written)
    assert copied == [
        f"{name}/{rel}"
        for name in ("oc-sft", "off-the-shelf")
        for rel in ("metrics.json", "psi/psi_metrics.json", "resolved_config.yaml")
    ]
    for path in written:
        assert path.read_bytes() == (runs / path.relative_to(kept)).read_bytes()
    assert not list(kept.rglob("*.npz")) and not (kept / "oc-sft" / "per_query_results").exists()
    assert study_table([kept / "off-the-shelf", kept / "oc-sft"]) == study_table(folders)


def test_archive_refuses_a_folder_without_a_summary(tmp_path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="none of a run folder's summary files"):
        archive_summary(tmp_path / "empty", tmp_path / "out")
    with pytest.raises(ConfigError, match="no such run folder"):
        archive_summary(tmp_path / "missing", tmp_path / "out")


def test_study_archive_command_copies_folders_and_files(tmp_path, capsys) -> None:
    folder = _run_folder(tmp_path / "runs" / "bsc", 0.4, 0.3)
    steps = tmp_path / "runs" / "steps.jsonl"
    steps.write_text(json.dumps({"step": "psi bsc", "seconds": 12.0}) + "\n")
    dest = tmp_path / "kept"
    assert main(["study", "archive", str(folder), str(steps), "--to", str(dest)]) == 0
    printed = capsys.readouterr().out.split()
    assert str(dest / "bsc" / "metrics.json") in printed and str(dest / "steps.jsonl") in printed
    assert (dest / "steps.jsonl").read_text() == steps.read_text()
    assert main(["study", "archive", str(tmp_path / "nowhere"), "--to", str(dest)]) == 2


def test_archive_keeps_a_judge_study_folder_with_its_nested_rerun(tmp_path) -> None:
    """A judge folder: records and summaries at every depth, never the resume parts."""
    judge = tmp_path / "study" / "llmbar-readout"
    kept = [
        "records.jsonl",
        "summary.json",
        "study_timing.json",
        "unit_costs.jsonl",
        "rerun/noise.json",
        "rerun/unit_costs.jsonl",
        "rerun/noise/batch_size1/run0.jsonl",
        "rerun/noise/batch_size1/run1.jsonl",
    ]
    dropped = [
        "records_parts/part-0.json",
        "rerun/noise/batch_size1/run0/part-0.json",
        "report.md",
        "run.log",
        ".locks/provenance.lock",
    ]
    for rel in kept + dropped:
        (judge / rel).parent.mkdir(parents=True, exist_ok=True)
        (judge / rel).write_text(rel)
    written = archive_summaries([judge], tmp_path / "docs")
    assert sorted(
        p.relative_to(tmp_path / "docs" / judge.name).as_posix() for p in written
    ) == sorted(kept)


def _texts(fixture: Path) -> list[str]:
    """Every query and candidate text of a fixture JSONL."""
    out = []
    for line in fixture.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        out += [rec["query"], *(c["text"] for c in rec["candidates"])]
    return out


def _content(path: Path) -> str:
    """A file's text; for an .npz every string it stores (arrays and names)."""
    if path.suffix != ".npz":
        return path.read_text(encoding="utf-8")
    with np.load(path, allow_pickle=False) as z:
        return " ".join([*z.files, *(" ".join(map(str, z[k].ravel())) for k in z.files)])


def test_archive_keeps_the_evidence_with_ids_only(tiny_study_runs: Path, tmp_path: Path) -> None:
    """run.trec, qrels.txt and psi/grade_distributions.npz go with the summaries; no file kept
    holds a query's or a candidate's text (the run folder does, so the check can fail)."""
    folder = tiny_study_runs / "off-the-shelf"
    written = archive_summaries([folder], tmp_path / "kept")
    kept = {p.relative_to(tmp_path / "kept" / folder.name).as_posix() for p in written}
    assert {"run.trec", "qrels.txt", "psi/grade_distributions.npz", "metrics.json"} <= kept
    assert not any(r.startswith(("per_query_results/", "psi/per_query/")) for r in kept)
    assert "rerank_results.json" not in kept and "run.log" not in kept
    for path in written:
        assert (
            path.read_bytes()
            == (folder / path.relative_to(tmp_path / "kept" / folder.name)).read_bytes()
        )
    texts = _texts(tiny_study_runs.parent / "fixture.jsonl")
    assert len(texts) == 3 * 7
    assert all(t in _content(folder / "rerank_results.json") for t in texts)
    for path in written:
        content = _content(path)
        assert not [t for t in texts if t in content], path
    with np.load(folder / "psi" / "grade_distributions.npz") as z:  # ids, not texts
        assert set(z["docid"]) == {f"q{q}-d{i}" for q in range(3) for i in range(6)}
