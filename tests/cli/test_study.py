"""``presdep study plan | table | curve | judge | task | stage | appendix`` against their scripts."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
import yaml

from presentation_dependence.cli import main
from presentation_dependence.studies.table import study_table
from presentation_dependence.studies.timing import step_seconds
from tests.cli.conftest import REPO, files_under, load_script
from tests.judge.conftest import items_file
from tests.judge.test_study import _config as judge_config

__all__ = ["items_file"]  # the judge items fixture, used below


def _plan(folder: Path) -> Path:
    """Two lanes: ``one`` writes a file and is done when it exists; ``two`` always runs."""
    steps = [
        {
            "name": "one",
            "lane": "a",
            "argv": ["{python}", "-c", f"open({str(folder / 'one.txt')!r}, 'w').write('1')"],
            "done": str(folder / "one.txt"),
        },
        {
            "name": "two",
            "lane": "b",
            "argv": ["{python}", "-c", f"open({str(folder / 'two.txt')!r}, 'a').write('2')"],
        },
    ]
    path = folder / "plan.yaml"
    path.write_text(yaml.safe_dump({"steps": steps}), encoding="utf-8")
    return path


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("how", ["presdep", "script"])
def test_plan_runs_a_lane_resumably_and_records_timings(tmp_path: Path, how: str) -> None:
    def plan(*args: str) -> int:
        if how == "presdep":
            return main(["study", "plan", *args])
        return load_script("scripts/train/run_cpu_study.py").main(list(args))

    path, timings = _plan(tmp_path), tmp_path / "steps.jsonl"
    assert plan("--plan", str(path), "--lane", "a", "--timings", str(timings)) == 0
    assert (tmp_path / "one.txt").read_text() == "1" and not (tmp_path / "two.txt").exists()
    assert [(r["step"], r["lane"]) for r in _lines(timings)] == [("one", "a")]
    assert plan("--plan", str(path), "--lane", "a", "--timings", str(timings)) == 0
    assert len(_lines(timings)) == 1, "a step whose done file exists is skipped"
    assert plan("--plan", str(path), "--timings", str(timings)) == 0  # both lanes
    assert (tmp_path / "two.txt").read_text() == "2"
    assert [r["step"] for r in _lines(timings)] == ["one", "two"]


def test_plan_exit_codes(tmp_path: Path, caplog) -> None:
    path = _plan(tmp_path)
    assert main(["study", "plan", "--plan", str(path), "--lane", "c"]) == 2
    assert "no step in lane 'c'" in caplog.text and "its lanes: a, b" in caplog.text
    failing = tmp_path / "failing.yaml"
    failing.write_text(
        yaml.safe_dump(
            {"steps": [{"name": "x", "argv": ["{python}", "-c", "raise SystemExit(5)"]}]}
        )
    )
    assert main(["study", "plan", "--plan", str(failing), "--timings", str(tmp_path / "t")]) == 5
    assert "step x failed (exit 5)" in caplog.text
    assert main(["study", "plan", "--reuse", f"bsc={tmp_path}", "--dry-run"]) == 2
    assert "--reuse bsc=" in caplog.text


def test_plan_dry_run_prints_the_built_in_study(capsys) -> None:
    argv = ["--dry-run", "--root", "r", "--launcher", "accelerate launch"]
    argv += ["--eval-override", "data.max_queries=8"]
    assert main(["study", "plan", *argv]) == 0
    out = capsys.readouterr().out
    assert load_script("scripts/train/run_cpu_study.py").main(argv) == 0
    assert capsys.readouterr().out == out
    lines = out.splitlines()
    assert lines[0] == "python scripts/train/prepare_study_data.py --out data/study"
    assert (
        "accelerate launch scripts/train/train_student.py configs/self-distill/perm-aug.yaml"
        in lines
    )
    assert sum("--override data.max_queries=8" in ln for ln in lines) == 12  # 6 scorers x run, psi
    assert lines[-1] == "python scripts/train/study_table.py r/dl19 --out r/table.md"


def test_table_matches_the_script_and_splices_the_doc(
    psi_runs: Path, tmp_path: Path, capsys
) -> None:
    doc = tmp_path / "DOC.md"
    doc.write_text("# T\n\n<!-- study-table:start -->\nOLD\n<!-- study-table:end -->\n")
    out = tmp_path / "table.md"
    assert main(["study", "table", str(psi_runs), "--out", str(out), "--doc", str(doc)]) == 0
    want = study_table([psi_runs / "off-the-shelf", psi_runs / "oc-sft"])
    assert out.read_text() == want and want in doc.read_text() and "OLD" not in doc.read_text()
    assert load_script("scripts/train/study_table.py").main([str(psi_runs)]) == 0
    assert capsys.readouterr().out == want  # without --out or --doc: printed
    assert main(["study", "table", str(tmp_path)]) == 2  # no finished run folder there
    # --block: another marker block of the same doc; the study-table block is left alone
    two = "<!-- study-table:start -->\nKEEP\n<!-- study-table:end -->\n"
    doc.write_text(
        two + "<!-- content-study-table:start -->\nOLD\n<!-- content-study-table:end -->\n"
    )
    args = ["study", "table", str(psi_runs), "--doc", str(doc), "--block", "content-study-table"]
    assert main(args) == 0
    assert "KEEP" in doc.read_text() and want in doc.read_text() and "OLD" not in doc.read_text()


def test_judge_study_writes_the_same_folders_as_its_script(
    tmp_path: Path, items_file: Path
) -> None:
    cfgs = [str(judge_config(tmp_path, items_file, "toy-readout", 0.8))]
    args = ["--rerun", "--gate", "--override", "bootstrap_resamples=100"]
    assert main(["study", "judge", *cfgs, "--root", str(tmp_path / "cli"), *args]) == 0
    folder = tmp_path / "cli" / "toy-readout"
    first = (folder / "records.jsonl").stat().st_mtime_ns
    assert main(["study", "judge", *cfgs, "--root", str(tmp_path / "cli"), *args]) == 0
    assert (folder / "records.jsonl").stat().st_mtime_ns == first  # finished: skipped
    timed = step_seconds(tmp_path / "cli" / "steps.jsonl")  # the study's one timing record
    assert {"toy-readout run", "toy-readout rerun", "toy-readout gate"} <= set(timed)
    script = load_script("scripts/judge_study.py")
    assert script.main([*cfgs, "--root", str(tmp_path / "script"), *args]) == 0
    assert files_under(tmp_path / "cli") == files_under(tmp_path / "script")


def test_reproduction_actions_match_the_script(monkeypatch, capsys, tmp_path: Path) -> None:
    monkeypatch.chdir(REPO)
    script = load_script("scripts/study.py")
    root = ["--data-root", str(tmp_path)]
    runs = [
        shlex.split("task list"),
        [*root, *shlex.split("task show --task passage-reranking --jobs dl19--*")],
        shlex.split("stage list --task passage-reranking"),
        [
            *root,
            *shlex.split("stage commands --task passage-reranking --stage rerank --jobs dl19--*"),
        ],
        shlex.split("appendix list"),
    ]
    for argv in runs:
        assert main(["study", *argv]) == 0, argv
        out = capsys.readouterr().out
        assert out and script.main(argv) == 0
        assert capsys.readouterr().out == out, argv
    assert (
        main(
            ["study", *root, *shlex.split("stage commands --task passage-reranking --stage rerank")]
        )
        == 0
    )
    assert "# blocked: data missing" in capsys.readouterr().out
    assert main(["study", "stage", "run", "--task", "passage-reranking", "--stage", "nope"]) == 2
    assert main(["study", "-v", "task", "list"]) == 0  # the script's -v, before the group


def test_curve_refuses_a_missing_config(tmp_path: Path, caplog) -> None:
    png = tmp_path / "c.png"
    assert main(["study", "curve", str(tmp_path / "nope.yaml"), "--png", str(png)]) == 2
    assert not png.exists() and "nope.yaml" in caplog.text


def test_curve_refuses_a_student_never_trained_and_takes_overrides(tmp_path: Path, caplog) -> None:
    """The override reaches the config (output_dir), and a folder with no adapter or snapshot
    is refused before the base model is measured, rather than drawing a base-only curve."""
    png = tmp_path / "c.png"
    out = tmp_path / "never-trained"
    argv = ["study", "curve", "configs/study/oc-sft.yaml", "-o", f"output_dir={out}"]
    assert main([*argv, "--png", str(png)]) == 2
    assert not png.exists() and "train it first" in caplog.text and str(out) in caplog.text


def test_plan_stops_after_the_named_step(tmp_path: Path, caplog) -> None:
    path, timings = _plan(tmp_path), tmp_path / "steps.jsonl"
    args = ["study", "plan", "--plan", str(path), "--timings", str(timings)]
    assert main([*args, "--stop-after", "one"]) == 0
    assert (tmp_path / "one.txt").exists() and not (tmp_path / "two.txt").exists()
    assert main([*args, "--lane", "b", "--stop-after", "one"]) == 2
    assert "no such step in lane 'b'" in caplog.text and "The steps: two" in caplog.text
    assert main([*args, "--stop-after", "on"]) == 2
    assert "Did you mean 'one'" in caplog.text


def test_table_from_scores_renders_the_stored_table_byte_for_byte(
    tiny_study_runs: Path, tmp_path: Path
) -> None:
    """From an archive of the tiny model's run folders: the table recomputed from the scores
    is the table of the stored json files, and it does not read those files."""
    kept = tmp_path / "kept"
    folders = [str(tiny_study_runs / s) for s in ("off-the-shelf", "oc-sft")]
    assert main(["study", "archive", *folders, "--to", str(kept)]) == 0
    stored, recomputed = tmp_path / "stored.md", tmp_path / "recomputed.md"
    assert main(["study", "table", str(kept), "--out", str(stored)]) == 0
    assert main(["study", "table", str(kept), "--from-scores", "--out", str(recomputed)]) == 0
    table = stored.read_text(encoding="utf-8")
    assert recomputed.read_text(encoding="utf-8") == table
    assert "| off-the-shelf | 3 |" in table and "| oc-sft | 3 |" in table
    assert "Paired over queries against `off-the-shelf`" in table
    assert study_table(folders, from_scores=True) == table  # the run folders themselves
    # A stored figure changed by hand shows in the stored rendering only.
    metrics = json.loads((kept / "oc-sft" / "metrics.json").read_text())
    given = f"{metrics['mean']['ndcg@10']:.3f}"
    metrics["mean"]["ndcg@10"] = 0.0123
    (kept / "oc-sft" / "metrics.json").write_text(json.dumps(metrics))
    assert f"| oc-sft | 3 | {given} |" in table and given != "0.012"
    assert "| oc-sft | 3 | 0.012 |" in study_table([kept / "off-the-shelf", kept / "oc-sft"])
    assert main(["study", "table", str(kept), "--from-scores", "--out", str(recomputed)]) == 0
    assert recomputed.read_text(encoding="utf-8") == table


def test_table_from_scores_refuses_a_folder_archived_without_its_scores(
    tmp_path: Path, caplog
) -> None:
    """The content study's archive predates the evidence: --from-scores names the folder and
    the missing file; rendering from the stored json files still works."""
    dl19 = REPO / "docs" / "results" / "content-study" / "dl19"
    assert main(["study", "table", str(dl19), "--from-scores"]) == 2
    assert f"{dl19 / 'off-the-shelf'} cannot be recomputed" in caplog.text
    assert "psi/grade_distributions.npz" in caplog.text
    out = tmp_path / "table.md"
    assert main(["study", "table", str(dl19), "--out", str(out)]) == 0
    assert "| oc-sft | 43 |" in out.read_text(encoding="utf-8")
