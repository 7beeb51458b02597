"""The trained-judge section: arms against the judge off the shelf, test-time averaging, and
the paired tests, from archived runs (scripted judges stand in for the trained ones)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from presentation_dependence.cli import main
from presentation_dependence.judge.scoring.averaged import summarise_averaged
from presentation_dependence.judge.scoring.settings import ScoringSettings
from presentation_dependence.studies.judge_arms import arms_markdown, baseline_run_ids, load_arms
from presentation_dependence.studies.judge_curves import curves_markdown, load_curves
from presentation_dependence.studies.judge_gates import heldout_gates_markdown
from tests.judge.test_study import _script


def _run(folder: Path, items: Path, run_id: str, accuracy: float) -> None:
    cfg = {
        "id": run_id,
        "data": {"dataset": "jsonl", "path": str(items), "max_items": 12},
        "judge": {"judge_class": "scripted", "accuracy": accuracy, "noise": 0.2},
        "placement": {"mode": "cyclic"},
        "bootstrap_resamples": 200,
    }
    folder.mkdir(parents=True, exist_ok=True)
    path = folder.parent / f"{folder.name}-{run_id}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    assert _script("scripts/judge_study.py").main([str(path), "--root", str(folder)]) == 0


def test_arms_section_from_archived_runs(tmp_path: Path, items_file: Path) -> None:
    baseline, trained = tmp_path / "study", tmp_path / "trained"
    _run(baseline, items_file, "toy-readout", 0.5)
    _run(trained / "placement-aug", items_file, "toy-readout", 0.7)
    _run(trained / "oc-sft-squared", items_file, "toy-readout", 0.9)
    groups = load_arms(trained, baseline)
    assert [r.run_id for r in groups["toy-readout"]] == [
        "off-the-shelf",
        "placement-aug",
        "oc-sft-squared",
    ]
    # a checkpoint judged before its run ended: beside the arms, under its folder's name
    _run(trained / "checkpoints" / "placement-aug-step-350", items_file, "toy-readout", 0.8)
    groups = load_arms(trained, baseline)
    labels = [r.run_id for r in groups["toy-readout"]]
    assert labels[-1] == "placement-aug-step-350" and len(labels) == 4
    text = arms_markdown(groups)
    for label in ("off-the-shelf", "placement-aug", "oc-sft-squared", "placement-aug-step-350"):
        assert f"| `{label}` |" in text
    for run in groups["toy-readout"]:  # every arm's averaging too, from its own records
        avg = summarise_averaged(run.records, ScoringSettings(0, 200, 0.95))
        acc = avg["accuracy"]["mean"]
        assert f"| test-time averaging of `{run.run_id}` | {avg['items']} | 4 | {acc:.3f} [" in text
    assert "#### `oc-sft-squared` (A) vs `placement-aug` (B), paired" in text
    # a checkpoint of an arm is paired as its arm is
    assert "#### `oc-sft-squared` (A) vs `placement-aug-step-350` (B), paired" in text
    assert "exact McNemar p" in text and "− test-time averaging (every placement" in text
    # the command writes the same text into a doc's block; nothing archived: said so
    doc = tmp_path / "J.md"
    doc.write_text("<!-- judge-arms:start -->\n<!-- judge-arms:end -->\n")
    args = ["study", "judge-arms", "--trained", str(trained), "--baseline", str(baseline)]
    assert main([*args, "--doc", str(doc)]) == 0
    assert text in doc.read_text()
    assert arms_markdown(load_arms(tmp_path / "none", baseline)).startswith("No trained judge")


def test_before_any_arm_the_baseline_and_its_averaging_are_shown(
    tmp_path: Path, items_file: Path
) -> None:
    baseline = tmp_path / "study"
    _run(baseline, items_file, "toy-readout", 0.5)
    groups = load_arms(tmp_path / "none", baseline, run_ids=("toy-readout", "absent-readout"))
    assert list(groups) == ["toy-readout"]  # a run id with no archived run is left out
    assert [r.run_id for r in groups["toy-readout"]] == ["off-the-shelf"]
    text = arms_markdown(groups)
    assert text.startswith("No trained judge has been evaluated yet. The rows every arm")
    avg = summarise_averaged(groups["toy-readout"][0].records, ScoringSettings(0, 200, 0.95))
    assert f"| test-time averaging of `off-the-shelf` | {avg['items']} | 4 |" in text
    assert "| `off-the-shelf` |" in text and "paired" not in text


def test_the_baseline_runs_are_the_splits_test_sets_once_each() -> None:
    ids = baseline_run_ids("configs/judge/train/splits.json")
    # five sets, two of them (GSM8K four-way and pairs) judged by one test config
    assert len(ids) == len(set(ids)) == 4
    for run_id in ids:  # each is a judge study run archived under that id
        assert (Path("docs/results/judge-study/runs") / run_id / "summary.json").is_file()


def _point(folder: Path, step: int, accuracy: float) -> None:
    (folder / "curve").mkdir(parents=True, exist_ok=True)
    point = {"step": step, "accuracy": accuracy, "accuracy_ci": [accuracy - 0.05, accuracy + 0.05]}
    point |= {"flip_share": 0.25, "slot_spread": 0.125, "num_items": 100, "cpu_s": 130.0}
    text = json.dumps({"key": {}, "point": point})
    (folder / "curve" / f"step-{step:06d}.json").write_text(text)


def test_curves_read_the_archive_first_then_the_in_progress_copy(tmp_path: Path) -> None:
    trained = tmp_path / "trained"
    running = trained / "in-progress" / "oc-sft-squared"
    for step, acc in ((100, 0.625), (50, 0.5)):
        _point(running, step, acc)
    served = json.loads((running / "curve" / "step-000100.json").read_text())
    served["point"]["dtype"] = "bfloat16"  # a point served in another dtype says so
    (running / "curve" / "step-000100.json").write_text(json.dumps(served))
    (running / "resolved_config.yaml").write_text(yaml.safe_dump({"judge": {"dtype": "float32"}}))
    (running / "early_stopping.json").write_text(json.dumps({"best_step": 100, "stop": False}))
    _point(trained / "placement-aug", 150, 0.75)  # archived: preferred over its in-progress copy
    _point(trained / "in-progress" / "placement-aug", 200, 0.25)

    curves = load_curves(trained, ("placement-aug", "oc-sft-squared", "oc-sft-symkl"))

    assert [(c.arm, [p.step for p in c.points]) for c in curves] == [
        ("placement-aug", [150]),
        ("oc-sft-squared", [50, 100]),  # sorted by step
    ]
    squared = curves[1]
    assert (squared.dtype, squared.best_step, squared.stopped) == ("float32", 100, False)
    text = curves_markdown(curves)
    assert (
        "| `oc-sft-squared` | bfloat16 | **100** | 100 | **0.625 [0.575, 0.675]** | 0.250 |" in text
    )
    assert "| `oc-sft-squared` | float32 | 50 | 100 | 0.500 [0.450, 0.550] |" in text
    assert "| `placement-aug` | n/a | 150 |" in text  # no frozen config there: said so
    assert curves_markdown([]) == ""


def test_figures_are_drawn_and_linked_from_the_doc(tmp_path: Path, items_file: Path) -> None:
    baseline, trained = tmp_path / "study", tmp_path / "trained"
    _run(baseline, items_file, "toy-readout", 0.5)
    _run(trained / "placement-aug", items_file, "toy-readout", 0.7)
    _point(trained / "in-progress" / "oc-sft-squared", 50, 0.55)
    _point(trained / "in-progress" / "oc-sft-squared", 100, 0.6)
    doc = tmp_path / "docs" / "J.md"
    doc.parent.mkdir()
    doc.write_text("<!-- judge-arms:start -->\n<!-- judge-arms:end -->\n")
    figures = tmp_path / "docs" / "figs"
    args = ["study", "judge-arms", "--trained", str(trained), "--baseline", str(baseline)]
    assert main([*args, "--doc", str(doc), "--figures", str(figures)]) == 0
    text = doc.read_text()
    for name in ("heldout_curves.png", "slot_accuracy.png"):
        assert (figures / name).read_bytes().startswith(b"\x89PNG")
        assert f"](figs/{name})" in text  # linked relative to the doc
    # without a trained run there is no slot figure to draw; without --doc, nothing to link from
    only = tmp_path / "only"
    assert (
        main(
            [
                "study",
                "judge-arms",
                "--trained",
                str(tmp_path / "none"),
                "--baseline",
                str(baseline),
                "--doc",
                str(doc),
                "--figures",
                str(only),
            ]
        )
        == 0
    )
    assert not only.exists() and "slot_accuracy.png" not in doc.read_text()
    assert main([*args, "--figures", str(figures)]) != 0


def test_curve_points_show_the_probability_figures_where_measured(tmp_path: Path) -> None:
    running = tmp_path / "in-progress" / "oc-sft-squared"
    _point(running, 50, 0.5)  # measured before the probability figures were recorded
    _point(running, 100, 0.6)
    path = running / "curve" / "step-000100.json"
    later = json.loads(path.read_text())
    later["point"] |= {"consistency": 0.00125, "median_margin": 0.0625}
    later["point"] |= {"consistent_accuracy": 0.4}  # recorded: shown as is
    path.write_text(json.dumps(later))
    text = curves_markdown(load_curves(tmp_path, ["oc-sft-squared"]))
    # step 50, no train log; right in both orders derived for a pair: 0.5 − 0.25 / 2
    assert "| 0.250 | 0.125 | 0.375 | n/a | n/a | n/a | n/a | 130 |" in text
    assert "| 0.250 | 0.125 | 0.400 | 0.0013 | 0.062 | n/a | n/a | 130 |" in text  # step 100
    # the training terms: the mean of the logged values since the point before
    log = [{"event": "start", "step": 0}]
    log += [{"step": s, "fit": 0.7, "consistency": 0.01} for s in (10, 20, 30, 40, 50)]
    log += [{"step": 60, "fit": 0.9, "consistency": 0.5}]  # logged twice: the later line counts
    log += [{"event": "resume", "step": 50}, {"step": 60, "fit": 0.6, "consistency": 0.002}]
    log += [{"step": 100, "fit": 0.5, "consistency": 0.004}]
    (running / "train_log.jsonl").write_text("".join(json.dumps(x) + "\n" for x in log))
    text = curves_markdown(load_curves(tmp_path, ["oc-sft-squared"]))
    assert "| n/a | n/a | 0.700 | 0.0100 | 130 |" in text  # steps 10-50
    assert "| 0.0013 | 0.062 | 0.550 | 0.0030 | 130 |" in text  # steps 60 (the later line), 100


def _verdict(mean: float, se: float, threshold: float, **extra: object) -> dict[str, object]:
    return {
        "threshold": threshold,
        "mean": mean,
        "noise_se": se,
        "margin": 2.0 * se,
        "z": 2.0,
        "k_used": 3,
        "n_cases": 400,
        "decision": "recorded",  # never read: the table decides by the gate's rule
        "config": {"id": "toy-readout"},
        **extra,
    }


def test_the_gate_table_decides_the_judge_off_the_shelf_at_each_arms_threshold(
    tmp_path: Path,
) -> None:
    baseline, trained = tmp_path / "study", tmp_path / "trained"
    choice = {"heldout_ci_low": 0.612, "threshold": 0.6}
    arm = trained / "placement-aug"
    arm.mkdir(parents=True)
    # 0.59 is below 0.60 but within the margin 2 x 0.01: passes within noise
    verdict = _verdict(0.59, 0.01, 0.6, threshold_choice=choice)
    (arm / "gate-heldout-threshold.json").write_text(json.dumps(verdict))
    assert heldout_gates_markdown(trained, baseline).count("\n| ") == 2  # head + one row
    (baseline / "toy-readout").mkdir(parents=True)
    off = _verdict(0.5, 0.0, 0.5)  # its study gate passed at 0.5; at 0.6 it fails either way
    (baseline / "toy-readout" / "gate_verdict.json").write_text(json.dumps(off))
    text = heldout_gates_markdown(trained, baseline)
    row = "| `placement-aug` | 0.612 → 0.60 | 400 | 3 | 0.5900 | 0.0100 | 0.0200 | fail "
    assert row + "| pass_within_noise |" in text
    row = "| off the shelf, same threshold as `placement-aug` | 0.612 → 0.60 | 400 | 3 | 0.5000 "
    assert row + "| 0.0000 | 0.0000 | fail | fail |" in text
    assert heldout_gates_markdown(tmp_path / "none", baseline) == ""
