"""presdep judge / noise end to end on the scripted judge (no model)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from presentation_dependence.cli import main
from presentation_dependence.judge.items.records import read_records


def config(tmp: Path, items: Path, **blocks: object) -> Path:
    cfg = {
        "data": {"dataset": "jsonl", "path": str(items), "max_items": 12},
        "judge": {"judge_class": "scripted", "accuracy": 0.6, "noise": 0.3, "parse_failure": 0.1},
        "placement": {"mode": "cyclic"},
        **blocks,
    }
    path = tmp / "task.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_judge_writes_records_summary_report_reproducibly(tmp_path: Path, items_file: Path) -> None:
    cfg = config(tmp_path, items_file)
    assert main(["judge", str(cfg), "--out", str(tmp_path / "a")]) == 0
    assert main(["judge", str(cfg), "--out", str(tmp_path / "b")]) == 0
    a, b = tmp_path / "a", tmp_path / "b"
    assert (a / "records.jsonl").read_bytes() == (b / "records.jsonl").read_bytes()
    recs = read_records(a / "records.jsonl")
    assert len(recs) == 12 * 4
    s = json.loads((a / "summary.json").read_text())
    assert s["records"] == 48 and s["items"] == 12 and s["placements_per_item"] == 4.0
    assert s["score_fail_chance"]["mean"] >= s["score_fail0"]["mean"]
    (prov,) = json.loads((a / "provenance.json").read_text())["invocations"]
    assert prov["judge"]["judge_class"] == "scripted"
    assert "judging 12 items" in (a / "run.log").read_text()
    report = (a / "report.md").read_text()
    assert "failure = 1/N" in report and "| A |" in report and "Spread between" in report


def test_noise_command(tmp_path: Path, items_file: Path) -> None:
    cfg = config(tmp_path, items_file)
    out = tmp_path / "n"
    assert (
        main(
            ["noise", str(cfg), "--out", str(out), "--batch-sizes", "1", "4", "8", "--repeats", "2"]
        )
        == 0
    )
    noise = json.loads((out / "noise.json").read_text())
    assert [r["condition"] for r in noise["runs"]] == [
        f"batch_size={b}" for b in (1, 1, 4, 4, 8, 8)
    ]
    assert len(noise["comparisons"]) == 5 and len(noise["paired_tests"]) == 2
    assert (out / "noise" / "batch_size1" / "run1.jsonl").is_file()
    md = (out / "noise.md").read_text()
    assert "noise ÷ SE" in md
    paired = md.split("## Paired tests")[1]  # one table, a row per condition against the first
    assert paired.count("| A | B |") == 1 and paired.count("| batch_size=1 run 0 |") == 2


def test_rank_task(tmp_path: Path, items_file: Path) -> None:
    cfg = config(tmp_path, items_file, task="rank", reranker={"reranker_class": "IdentityReranker"})
    assert main(["judge", str(cfg), "--out", str(tmp_path / "r")]) == 0
    s = json.loads((tmp_path / "r" / "ranking_summary.json").read_text())
    assert s["items"] == 12 and s["num_presentations"] == 4
    assert "τ-PSI" in (tmp_path / "r" / "report.md").read_text()


def test_shipped_judge_configs_validate() -> None:
    from presentation_dependence.judge.config import load_judge_config

    paths = sorted(Path(__file__).resolve().parents[2].joinpath("configs", "judge").glob("*.yaml"))
    assert paths
    for p in paths:
        load_judge_config(p)


def test_judge_doc_renders_the_measured_section(tmp_path: Path, items_file: Path) -> None:
    from presentation_dependence.studies.judge_docs import MARK_END, MARK_START, update_doc

    cfg = config(tmp_path, items_file)
    out = tmp_path / "n"
    assert main(["noise", str(cfg), "--out", str(out), "--batch-sizes", "1", "2"]) == 0
    doc = tmp_path / "JUDGE.md"
    doc.write_text(f"# Title\n\n{MARK_START}\nold\n{MARK_END}\n\nafter\n")
    update_doc(doc, out)
    text = doc.read_text()
    assert "old" not in text and text.endswith(f"{MARK_END}\n\nafter\n")
    assert "first 12 of the 40 items" in text and "uv run presdep noise" in text
    assert "### Rerun noise" in text and "exact McNemar p" in text
