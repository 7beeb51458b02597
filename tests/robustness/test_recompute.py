"""``robustness/recompute.py``: an archived run folder's figures recomputed from its evidence."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from presentation_dependence.cli import main
from presentation_dependence.errors import PresdepError
from presentation_dependence.robustness.recompute import EVIDENCE, recompute_run
from presentation_dependence.studies.archive import archive_summaries

REPO = Path(__file__).resolve().parents[2]


def _archived(runs: Path, dest: Path, scorer: str = "off-the-shelf") -> Path:
    archive_summaries([runs / scorer], dest)
    return dest / scorer


def _as_stored(obj: object) -> str:
    """The text ``RunFolder.write_json`` writes."""
    return json.dumps(obj, indent=1, ensure_ascii=False) + "\n"


def _snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {
        p.relative_to(folder).as_posix(): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in folder.rglob("*")
        if p.is_file()
    }


def test_an_archive_recomputes_its_json_files_byte_for_byte_and_writes_nothing(
    tiny_study_runs: Path, tmp_path: Path
) -> None:
    kept = _archived(tiny_study_runs, tmp_path)
    assert not (kept / "per_query_results").exists() and not (kept / "psi" / "per_query").exists()
    before = _snapshot(kept)
    done = recompute_run(kept)
    assert done.folder == kept
    assert _as_stored(done.metrics) == (kept / "metrics.json").read_text(encoding="utf-8")
    psi = (kept / "psi" / "psi_metrics.json").read_text(encoding="utf-8")
    assert _as_stored(done.psi_metrics) == psi
    assert _snapshot(kept) == before  # not a byte written, not a file touched or added


def _scores_of_the_first_presentation(path: Path) -> None:
    """Rewrite ``grade_distributions.npz`` so that every presentation of a query and variant
    scores each candidate as the variant's first presentation does."""
    with np.load(path, allow_pickle=False) as z:
        cols = {k: z[k] for k in z.files}
    score = cols["score"].copy()
    for q in np.unique(cols["qid"]):
        for var in np.unique(cols["variant"]):
            rows = np.flatnonzero((cols["qid"] == q) & (cols["variant"] == var))
            first = rows[cols["presentation"][rows] == 0]
            score[rows] = score[first][cols["input_index"][rows]]
    cols["score"] = score
    np.savez_compressed(path, **cols)  # type: ignore[arg-type]


def test_the_recompute_reads_the_evidence_not_the_stored_figures(
    tiny_study_runs: Path, tmp_path: Path
) -> None:
    kept = _archived(tiny_study_runs, tmp_path)
    stored = json.loads((kept / "psi" / "psi_metrics.json").read_text(encoding="utf-8"))
    assert stored["variants"]["random_shuffle"]["summary"]["tau_psi"]["mean"] > 0.05
    assert json.loads((kept / "metrics.json").read_text())["mean"]["ndcg@10"] > 0
    # Every judgement 0: no query has a relevant document, so every nDCG@10 is 0.
    qrels = kept / "qrels.txt"
    lines = [ln.split() for ln in qrels.read_text().splitlines()]
    qrels.write_text("".join(f"{q} {it} {d} 0\n" for q, it, d, _ in lines))
    # Every presentation scored as the first: the rankings agree, so every τ-PSI is 0.
    _scores_of_the_first_presentation(kept / "psi" / "grade_distributions.npz")
    done = recompute_run(kept)
    assert set(done.metrics["per_query"]) == {"q0", "q1", "q2"}
    assert all(v["ndcg@10"] == 0.0 for v in done.metrics["per_query"].values())
    shuffled = done.psi_metrics["variants"]["random_shuffle"]
    for q in ("q0", "q1", "q2"):
        assert shuffled["per_query"][q]["tau_psi"] == pytest.approx(0.0, abs=1e-12)
        assert shuffled["per_query"][q]["delta_ndcg"] == pytest.approx(0.0, abs=1e-12)
    assert done.psi_metrics["cost"] == stored["cost"]  # the cost is the recorded one


def test_a_folder_without_its_evidence_is_refused_by_name(
    tiny_study_runs: Path, tmp_path: Path
) -> None:
    kept = _archived(tiny_study_runs, tmp_path)
    for rel in EVIDENCE:
        (kept / rel).rename(kept / f"{rel}.away")
        with pytest.raises(PresdepError, match="cannot be recomputed") as err:
            recompute_run(kept)
        assert str(kept) in str(err.value) and f"lacks {rel} " in str(err.value)
        (kept / f"{rel}.away").rename(kept / rel)
    old = REPO / "docs" / "results" / "content-study" / "dl19" / "off-the-shelf"
    with pytest.raises(PresdepError) as err:
        recompute_run(old)
    assert "lacks run.trec, qrels.txt, psi/grade_distributions.npz " in str(err.value)


def test_psi_from_scores_on_an_archive_reads_the_folders_own_config(
    tiny_study_runs: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    kept = _archived(tiny_study_runs, tmp_path)
    path = kept / "psi" / "psi_metrics.json"
    want = path.read_bytes()
    doc = json.loads(want)
    path.write_text(json.dumps({"cost": doc["cost"], "variants": {}}))  # figures gone, cost kept
    assert main(["psi", "--run-dir", str(kept), "--from-scores"]) == 0  # no CONFIG
    assert path.read_bytes() == want
    # Without CONFIG the folder's own config is used as it is: an override is refused.
    assert main(["psi", "--run-dir", str(kept), "--from-scores", "-o", "robustness.seed=3"]) == 2
    assert "drop --override" in caplog.text
