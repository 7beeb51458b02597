"""A judge study from run folders: placement flips, the study script (resumable), the doc tables
and the figure; run on the scripted judge (no model)."""

from __future__ import annotations

import importlib.util
import json
import logging
import threading
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from presentation_dependence.judge.config import load_judge_config
from presentation_dependence.judge.items.records import JudgeRequest, read_records
from presentation_dependence.judge.parser import verdict_record
from presentation_dependence.provenance import cpu_info, cpu_label
from presentation_dependence.runners.costs import phase_cost
from presentation_dependence.runners.run_folder import RunFolder
from presentation_dependence.studies.archive import archive_summaries
from presentation_dependence.studies.judge_docs import STUDY_END, STUDY_START, update_study_doc
from presentation_dependence.studies.judge_study import load_study, placement_flips
from presentation_dependence.studies.timing import step_seconds
from tests.judge.conftest import make_items, noise_outputs

REPO = Path(__file__).resolve().parents[2]


def _script(rel: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(Path(rel).stem, REPO / rel)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_placement_flips_counts_responses_not_slots() -> None:
    a, b, c = make_items(3, 2)
    recs = [
        verdict_record(JudgeRequest(a, (0, 1)), "[[A]]", "strict"),  # response 0
        verdict_record(JudgeRequest(a, (1, 0)), "[[A]]", "strict"),  # response 1: flipped
        verdict_record(JudgeRequest(b, (0, 1)), "[[A]]", "strict"),  # response 0
        verdict_record(JudgeRequest(b, (1, 0)), "[[B]]", "strict"),  # response 0: same
        verdict_record(JudgeRequest(c, (0, 1)), "[[A]]", "strict"),
        verdict_record(JudgeRequest(c, (1, 0)), "no marker", "strict"),  # not all parsed
    ]
    f = placement_flips(recs)
    assert (f["items"], f["items_all_parsed"], f["items_flipped"]) == (3, 2, 1)
    assert f["flip_share"] == 0.5 and f["pair_flip_share"] == 0.5
    assert f["flip_ci"][0] < 0.5 < f["flip_ci"][1]


def _config(folder: Path, items: Path, run_id: str, accuracy: float) -> Path:
    cfg = {
        "id": run_id,
        "data": {"dataset": "jsonl", "path": str(items), "max_items": 10},
        "judge": {
            "judge_class": "scripted",
            "accuracy": accuracy,
            "noise": 0.2,
            "parse_failure": 0.1,
        },
        "placement": {"mode": "full" if run_id.startswith("pair") else "cyclic"},
        "gate": {"threshold": 0.5, "k": 2},
        "bootstrap_resamples": 200,
    }
    path = folder / f"{run_id}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_study_script_resumes_and_the_doc_renders_every_table(
    tmp_path: Path, items_file: Path
) -> None:
    study = _script("scripts/judge_study.py")
    cfgs = [
        _config(tmp_path, items_file, "toy-generative", 0.5),
        _config(tmp_path, items_file, "toy-readout", 0.8),
    ]
    root = tmp_path / "study"
    args = [*map(str, cfgs), "--root", str(root), "--rerun", "--gate"]
    assert study.main(args) == 0
    first = (root / "toy-readout" / "records.jsonl").stat().st_mtime_ns
    assert study.main(args) == 0  # finished runs are skipped
    assert (root / "toy-readout" / "records.jsonl").stat().st_mtime_ns == first
    timed = step_seconds(root / "steps.jsonl")  # the study's one timing record
    assert {"toy-readout run", "toy-readout rerun", "toy-readout gate"} <= set(timed)
    assert not (root / "toy-readout" / "study_timing.json").exists()
    assert list((root / "toy-readout" / "gate_cache").glob("*.jsonl"))  # the gate can resume
    # the gate's k = 2 calls of each case are the sweep's and the rerun's: none judged again
    verdict = json.loads((root / "toy-readout" / "gate_verdict.json").read_text())
    assert verdict["calls_reused"] == 2 * verdict["n_cases"] and verdict["calls_judged"] == 0

    runs = load_study(root)
    assert [r.set_name for r in runs] == ["jsonl", "jsonl"]
    doc, fig = tmp_path / "JUDGE.md", tmp_path / "fig" / "slots.png"
    doc.write_text(f"# J\n\n{STUDY_START}\nOLD-BLOCK\n{STUDY_END}\n")
    update_study_doc(doc, root, fig, plan=cfgs)
    text = doc.read_text()
    (Path("/tmp") / "judge_study_test_doc.md").write_text(text)
    assert "OLD-BLOCK" not in text and "### Overview" in text and "### `jsonl`" in text
    assert "exact McNemar p" in text and "With failure = 1/N the paired difference" in text
    assert "verdict without margin" in text and "fig/slots.png" in text
    here = cpu_label(cpu_info())
    procs = text[text.index("### Processors") :]
    row = next(line for line in procs.splitlines() if line.startswith("| `toy-readout`"))
    parts = runs[1].summary["items"]  # one part an item, and the rerun judges every call again
    assert row == f"| `toy-readout` | {parts} on {here} | {parts} on {here} |"
    row = next(line for line in text.splitlines() if line.startswith("| `toy-readout`"))
    assert "not run" not in row  # the rerun noise is reported
    assert fig.read_bytes().startswith(b"\x89PNG")
    assert "### Full-size runs: calls and estimated CPU time" in text
    # The archived summaries (presdep study archive) render the same block.
    kept = tmp_path / "kept"
    archive_summaries(sorted(root.iterdir()), kept)
    doc.write_text(f"# J\n\n{STUDY_START}\nOLD-BLOCK\n{STUDY_END}\n")
    update_study_doc(doc, kept, tmp_path / "fig" / "kept.png", plan=cfgs)
    assert doc.read_text().replace(str(kept), str(root)).replace("kept.png", "slots.png") == text


def test_plan_counts_calls_and_scales_cpu_from_measured_runs(
    tmp_path: Path, items_file: Path
) -> None:
    from presentation_dependence.studies.judge_plan import plan_rows

    study = _script("scripts/judge_study.py")
    ran = _config(tmp_path, items_file, "toy-readout", 0.8)
    assert study.main([str(ran), "--root", str(tmp_path / "s")]) == 0
    other = _config(tmp_path, items_file, "pair-readout", 0.8)  # 'full': 24 placements
    runs = load_study(tmp_path / "s")
    own, scaled = plan_rows([ran, other], runs)
    assert (own.items, own.calls, scaled.calls) == (10, 40, 240)
    assert own.basis == "`toy-readout`" and "scaled" in scaled.basis
    assert runs[0].cpu_seconds is not None
    cost = phase_cost(tmp_path / "s" / "toy-readout", "judge")  # every part's seconds, summed
    assert cost is not None and cost.complete and runs[0].cpu_seconds == cost.cpu_seconds
    assert own.cpu_hours == pytest.approx(runs[0].cpu_seconds / 3600)
    assert scaled.cpu_per_call == pytest.approx(own.cpu_per_call)  # same items


def test_a_run_from_before_unit_costs_reads_its_study_timing(
    tmp_path: Path, items_file: Path
) -> None:
    """A folder whose parts did not all record their cost (a run begun before they did) takes
    its cost from the study_timing.json the judge study wrote then (committed archives)."""
    cfg = _config(tmp_path, items_file, "toy-readout", 0.8)
    assert _script("scripts/judge_study.py").main([str(cfg), "--root", str(tmp_path / "s")]) == 0
    folder = tmp_path / "s" / "toy-readout"
    costs = (folder / "unit_costs.jsonl").read_text().splitlines()
    (folder / "unit_costs.jsonl").write_text("\n".join(costs[1:]) + "\n")  # one part unrecorded
    old = {"seconds": 12.5, "cpu_seconds": 10.25, "rerun_seconds": 3.0, "rerun_cpu_seconds": 2.0}
    (folder / "study_timing.json").write_text(json.dumps(old, indent=2) + "\n")
    (run,) = load_study(tmp_path / "s")
    assert (run.seconds, run.cpu_seconds) == (12.5, 10.25)


def test_shipped_study_configs_validate() -> None:
    paths = sorted((REPO / "configs" / "judge" / "study").glob("*.yaml"))
    assert len(paths) >= 10
    kinds = set()
    for p in paths:
        cfg = load_judge_config(p)
        kinds.add(cfg.judge.judge_class if cfg.task == "judge" else cfg.task)
        if cfg.task == "judge" and not cfg.id.startswith("noise-"):
            assert cfg.placement.mode == "full"
    assert kinds == {"readout", "transformers", "rank"}


def test_load_study_refuses_an_empty_root(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        load_study(tmp_path)


def test_rerun_of_the_first_items_only_is_measured_and_labelled(
    tmp_path: Path, items_file: Path
) -> None:
    """``--rerun-items N``: the rerun judges the first N items' calls, compared with the same
    calls of the sweep, and the overview names the share it was measured on."""
    from presentation_dependence.cli import main
    from presentation_dependence.studies.judge_tables import study_markdown

    cfg = _config(tmp_path, items_file, "toy-readout", 0.8)
    root = tmp_path / "study"
    args = ["study", "judge", str(cfg), "--root", str(root), "--rerun", "--rerun-items", "3"]
    assert main(args) == 0
    sweep = read_records(root / "toy-readout" / "records.jsonl")
    per_item = len(sweep) // len({r.item_id for r in sweep})
    noise = json.loads((root / "toy-readout" / "rerun" / "noise.json").read_text())
    within = next(c for c in noise["comparisons"] if "run 1 vs run 0" in c["label"])
    assert (within["records"], within["items"]) == (3 * per_item, 3)
    assert f"({3 * per_item} of {len(sweep)} calls)" in study_markdown(load_study(root), None)
    assert main([*args[:-2], "--rerun-items", "0"]) == 2


def test_a_process_whose_parts_another_still_judges_leaves_the_config_to_it(
    tmp_path: Path, items_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two processes share a study: one whose run returns unfinished (another process judges
    parts) neither reruns nor gates, and does not fail; the other finishes the config."""
    import presentation_dependence.studies.judge_run as study_run

    cfg = load_judge_config(_config(tmp_path, items_file, "toy-readout", 0.8))
    calls: list[str] = []
    monkeypatch.setattr(study_run, "run_judge_task", lambda *a, **k: calls.append("judge"))
    monkeypatch.setattr(study_run, "run_noise_task", lambda *a, **k: calls.append("rerun"))
    monkeypatch.setattr(study_run, "run_gate_task", lambda *a, **k: calls.append("gate"))
    study_run.run_study_config(cfg, tmp_path / "study", [], rerun=True, gate=True)
    assert calls == ["judge"]
    monkeypatch.undo()
    study_run.run_study_config(cfg, tmp_path / "study", [], rerun=True, gate=True)
    out = tmp_path / "study" / "toy-readout"
    assert (out / "rerun" / "noise.json").is_file() and (out / "gate_verdict.json").is_file()


class _ReleaseWhenWaiting(logging.Handler):
    """Sets ``release`` once the stage logs that it waits for a unit another process holds."""

    def __init__(self, release: threading.Event) -> None:
        super().__init__()
        self.waiting = release

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith("waiting for"):
            self.waiting.set()


def _hold_claim(folder: Path, key: str, release: threading.Event) -> threading.Thread:
    """Hold the claim ``key`` of ``folder`` in a thread (as another process would) until
    ``release`` is set, then let go without writing anything (as a process that died)."""
    held = threading.Event()

    def holder() -> None:
        with RunFolder(folder).claim(key) as ok:
            assert ok
            held.set()
            assert release.wait(60)

    thread = threading.Thread(target=holder)
    thread.start()
    assert held.wait(30)
    return thread


def test_a_process_waits_for_the_sweeps_last_part_and_goes_on_to_the_rerun(
    tmp_path: Path, items_file: Path
) -> None:
    """Where a rerun follows, a process that finds a part of the sweep held by another waits
    for it instead of leaving (so the rerun has both processes), and judges it itself when the
    holder lets go without writing it; the outputs equal those of one process alone."""
    import presentation_dependence.studies.judge_run as study_run

    cfg = load_judge_config(_config(tmp_path, items_file, "toy-readout", 0.8))
    assert study_run.run_study_config(cfg, tmp_path / "ref", [], rerun=True, gate=False)
    out = tmp_path / "study" / "toy-readout"
    release = threading.Event()
    stage_log = logging.getLogger("presentation_dependence.runners.stage")
    handler = _ReleaseWhenWaiting(release)
    stage_log.addHandler(handler)
    try:
        holder = _hold_claim(out, "judge:records_parts/part00002", release)
        assert study_run.run_study_config(cfg, tmp_path / "study", [], rerun=True, gate=False)
    finally:
        stage_log.removeHandler(handler)
        release.set()
    holder.join(30)
    ref = tmp_path / "ref" / "toy-readout"
    for name in ("records.jsonl", "summary.json"):
        assert (out / name).read_bytes() == (ref / name).read_bytes()
    assert noise_outputs(out / "rerun") == noise_outputs(ref / "rerun")
    assert "waiting for 1 parts" in (out / "run.log").read_text()
    # Without a rerun or a gate to join, the held part is left to its holder, as before.
    alone = tmp_path / "alone" / "toy-readout"
    release = threading.Event()
    holder = _hold_claim(alone, "judge:records_parts/part00002", release)
    try:
        assert not study_run.run_study_config(cfg, tmp_path / "alone", [], rerun=False, gate=False)
    finally:
        release.set()
    holder.join(30)
    assert not (alone / "summary.json").exists()


def test_a_gate_another_process_runs_is_left_to_it(
    tmp_path: Path, items_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The gate is claimed as a whole: a process that finds it claimed neither runs it nor
    archives the config, and reports the config unfinished."""
    import presentation_dependence.studies.judge_run as study_run

    cfg = load_judge_config(_config(tmp_path, items_file, "toy-readout", 0.8))
    out = tmp_path / "study" / "toy-readout"
    gates: list[object] = []
    real = study_run.run_gate_task
    monkeypatch.setattr(study_run, "run_gate_task", lambda *a, **k: gates.append(a) or real(*a))
    with RunFolder(out).claim("gate") as held:
        assert held
        finished = study_run.run_study_config(
            cfg, tmp_path / "study", [], rerun=True, gate=True, archive_to=tmp_path / "archive"
        )
    assert not finished and gates == [] and not (tmp_path / "archive").exists()
    assert (out / "rerun" / "noise.json").is_file()  # everything before the gate was done
    assert study_run.run_study_config(cfg, tmp_path / "study", [], rerun=True, gate=True)
    assert len(gates) == 1 and (out / "gate_verdict.json").is_file()


def test_only_the_process_that_finishes_a_config_archives_it(
    tmp_path: Path, items_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--archive-to``: a process that leaves an unfinished config to another archives nothing
    (no half-finished run lands in git); the one that finishes it archives the summaries."""
    import presentation_dependence.studies.judge_run as study_run

    cfg = load_judge_config(_config(tmp_path, items_file, "toy-readout", 0.8))
    archive = tmp_path / "archive"
    monkeypatch.setattr(study_run, "run_judge_task", lambda *a, **k: None)
    left = study_run.run_study_config(
        cfg, tmp_path / "study", [], rerun=True, gate=False, archive_to=archive
    )
    assert left is False and not archive.exists()
    monkeypatch.undo()
    assert study_run.run_study_config(
        cfg, tmp_path / "study", [], rerun=True, gate=False, archive_to=archive
    )
    kept = archive / "toy-readout"
    assert (kept / "summary.json").is_file() and (kept / "rerun" / "noise.json").is_file()
    assert read_records(kept / "records.jsonl") == read_records(
        tmp_path / "study" / "toy-readout" / "records.jsonl"
    )
