"""The study plan and table, the training-step benchmark, and the missing-extra error."""

from __future__ import annotations

import json

import pytest

from presentation_dependence.optional import MissingExtraError, import_optional
from presentation_dependence.studies.plan import study_plan
from presentation_dependence.studies.table import collapsed, study_table
from tests.training.conftest import fake_run


def test_missing_extra_names_it():
    with pytest.raises(MissingExtraError, match=r"presentation-dependence\[train\]"):
        import_optional("surely_not_installed_pkg", extra="train", purpose="testing")


def test_study_plan_runs_every_scorer_through_the_normal_runners():
    steps = study_plan()
    names = [s.name for s in steps]
    assert names[:3] == ["data", "silver", "lambda"]
    for scorer in ("off-the-shelf", "bsc", "single-order", "order-averaged", "perm-aug", "oc-sft"):
        assert f"run {scorer}" in names and f"psi {scorer}" in names
    run_oc = next(s for s in steps if s.name == "run oc-sft")
    assert run_oc.needs_chosen_adapter and "scripts/run_experiment.py" in run_oc.argv
    train = [s for s in steps if s.name.startswith("train ")]
    assert len(train) == 3 and all("scripts/train/train_student.py" in s.argv for s in train)
    launched = study_plan(launcher=["accelerate", "launch"])
    assert next(s for s in launched if s.name == "train perm-aug").argv[:2] == [
        "accelerate",
        "launch",
    ]


def test_study_table(tmp_path):
    fake_run(tmp_path / "off-the-shelf", 0.4, tau=0.5, spread=0.4)
    fake_run(tmp_path / "oc-sft", 0.45, tau=0.2, spread=0.3)
    fake_run(tmp_path / "flat", 0.45, tau=0.1, spread=0.01)
    table = study_table([tmp_path / "off-the-shelf", tmp_path / "oc-sft", tmp_path / "flat"])
    lines = table.splitlines()
    assert lines[2].startswith("| off-the-shelf | 3 | 0.400 | 0.350 [0.250, 0.450]")
    assert "| oc-sft |" in lines[3]
    # paired: oc-sft - off-the-shelf is exactly -0.3 in tau_psi on every query
    paired = next(ln for ln in lines if ln.startswith("| oc-sft | tau_psi |"))
    assert "-0.300 [-0.300, -0.300]" in paired
    verdict = {ln.split(" | ")[0][2:]: ln for ln in lines if ln.endswith(("| yes |", "| no |"))}
    # halved (0.2/0.5 = 0.40), nDCG kept (+0.05), not collapsed
    assert verdict["oc-sft"] == "| oc-sft | 0.40 | yes | yes | no |"
    # the flat scorer "halves" tau-PSI only by flattening: spread 0.01 < 0.5 * 0.4
    assert verdict["flat"].endswith("| yes |")


def test_study_table_header_says_the_runs_m(tmp_path):
    """The header names the M the folders were measured with, not a fixed 10 (issue 40)."""
    fake_run(tmp_path / "a" / "off-the-shelf", 0.4, tau=0.5, spread=0.4, presentations=4)
    fake_run(tmp_path / "a" / "oc-sft", 0.45, tau=0.2, spread=0.3, presentations=4)
    table = study_table([tmp_path / "a" / "off-the-shelf", tmp_path / "a" / "oc-sft"])
    assert "nDCG@10 over 4 shuffles [95% CI]" in table and "10 shuffles" not in table
    fake_run(tmp_path / "b" / "oc-sft", 0.45, tau=0.2, spread=0.3, presentations=6)
    mixed = study_table([tmp_path / "a" / "off-the-shelf", tmp_path / "b" / "oc-sft"])
    assert "over the shuffles (M: off-the-shelf 4, oc-sft 6)" in mixed


def test_collapse_rule():
    base = {"score_spread": 0.4, "tied_share": 0.0}
    assert not collapsed({"score_spread": 0.25, "tied_share": 0.1}, base)
    assert collapsed({"score_spread": 0.1, "tied_share": 0.1}, base)
    assert collapsed({"score_spread": 0.4, "tied_share": 0.6}, base)


@pytest.mark.slow
def test_training_step_benchmark_on_the_tiny_model(tiny_model):
    pytest.importorskip("peft")
    from presdep_tools.bench.report import training_benchmark_markdown
    from presdep_tools.bench.training import training_step_benchmark

    r = training_step_benchmark(
        tiny_model,
        num_candidates=4,
        max_passage_chars=60,
        dtype="float32",
        repeats=1,
        isolate=False,
    )
    assert r["single_view"]["views"] == 1 and r["oc_sft"]["views"] == 2
    assert r["oc_sft"]["prompt_tokens"] > r["single_view"]["prompt_tokens"]
    assert r["time_ratio"] > 0 and r["goal_ratio"] == 2.1
    assert r["oc_sft"]["compiled"] is False and r["oc_sft_autocast"]["autocast_bfloat16"]
    if r["oc_sft_compiled"]["compiled"]:  # a C++ compiler was found
        assert r["speedup_compiled"] > 0 and r["time_ratio_compiled"] > 0
    assert r["oc_sft"]["tokens_per_second"] > 0 and r["oc_sft"]["profile"]
    md = training_benchmark_markdown(r)
    assert "OC-SFT / single view" in md and "OC-SFT, optimised" in md


def test_study_table_pairs_oc_sft_against_every_other_student(tmp_path):
    fake_run(tmp_path / "off-the-shelf", 0.4, tau=0.5, spread=0.4)
    fake_run(tmp_path / "single-order", 0.45, tau=0.3, spread=0.3)
    fake_run(tmp_path / "debias-first", 0.45, tau=0.35, spread=0.3)
    fake_run(tmp_path / "oc-sft", 0.45, tau=0.2, spread=0.3)
    table = study_table(
        [tmp_path / n for n in ("off-the-shelf", "single-order", "debias-first", "oc-sft")]
    )
    lines = table.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("OC-SFT against each other"))
    section = lines[start:]
    row = next(ln for ln in section if ln.startswith("| single-order | tau_psi |"))
    assert "| -0.100 [-0.100, -0.100] |" in row  # oc-sft − single-order on every query
    row = next(ln for ln in section if ln.startswith("| debias-first | tau_psi |"))
    assert "| -0.150 [-0.150, -0.150] |" in row
    assert not any(ln.startswith("| oc-sft | tau_psi |") for ln in section[:12])


def test_collapse_rule_is_not_applied_off_the_grade_scale(tmp_path):
    from presentation_dependence.studies.table import run_paradigm

    base = {"score_spread": 0.3, "tied_share": 0.1}
    # a bi-encoder teacher's cosines are not expected grades: no verdict
    assert (
        collapsed({"score_spread": 0.01, "tied_share": 0.9, "paradigm": "pointwise"}, base) is None
    )
    assert collapsed(
        {"score_spread": 0.01, "tied_share": 0.1, "paradigm": "listwise-readout"}, base
    )
    folder = tmp_path / "run"
    folder.mkdir()
    assert run_paradigm(folder) is None
    (folder / "resolved_config.yaml").write_text(
        "reranker:\n  reranker_class: E5BiEncoderReranker\n"
    )
    assert run_paradigm(folder) == "pointwise"
    (folder / "resolved_config.yaml").write_text("reranker:\n  reranker_class: GradeReranker\n")
    assert run_paradigm(folder) == "listwise-readout"


def test_study_table_pairs_oc_sft_against_a_single_other_student(tmp_path):
    # the real study reached this state first: one student besides OC-SFT
    fake_run(tmp_path / "off-the-shelf", 0.4, tau=0.5, spread=0.4)
    fake_run(tmp_path / "single-order", 0.45, tau=0.3, spread=0.3)
    fake_run(tmp_path / "oc-sft", 0.45, tau=0.2, spread=0.3)
    table = study_table([tmp_path / n for n in ("off-the-shelf", "single-order", "oc-sft")])
    section = table.split("OC-SFT against each other", 1)[1].splitlines()
    row = next(ln for ln in section if ln.startswith("| single-order | tau_psi |"))
    assert "| -0.100 [-0.100, -0.100] |" in row


@pytest.mark.slow
def test_training_step_benchmark_times_the_study_allocator_in_its_own_process(tiny_model):
    """The allocator part runs in a child started with the study's ALLOCATOR_ENV, the OC-SFT
    part with the measuring 128 KiB threshold; both report CPU time and page faults."""
    pytest.importorskip("peft")
    from presdep_tools.bench.report import training_benchmark_markdown
    from presdep_tools.bench.training import MMAP_THRESHOLD, training_step_benchmark
    from presentation_dependence.studies.sequencer import ALLOCATOR_ENV

    r = training_step_benchmark(
        tiny_model,
        parts=("oc_sft", "oc_sft_study_allocator"),
        profile=False,
        num_candidates=4,
        max_passage_chars=60,
        dtype="float32",
        repeats=1,
        num_threads=1,
    )
    assert r["oc_sft_study_allocator"]["malloc_env"] == ALLOCATOR_ENV
    assert r["oc_sft"]["malloc_env"]["MALLOC_MMAP_THRESHOLD_"] == str(MMAP_THRESHOLD)
    assert r["allocator_speedup"] > 0 and r["allocator_env"] == ALLOCATOR_ENV
    for part in ("oc_sft", "oc_sft_study_allocator"):
        assert r[part]["user_seconds_per_step"] > 0 and r[part]["minor_faults_per_step"] >= 0
    assert "the study's allocator" in training_benchmark_markdown(r)


def test_study_table_names_the_processors_and_flags_rows_of_another(tmp_path):
    """bfloat16 scores depend on the CPU's kernels: the table says where its rows ran."""
    epyc = {"model": "AMD EPYC", "flags": ["avx2", "avx512_bf16"]}
    for name, cpus in (("off-the-shelf", [epyc]), ("oc-sft", [epyc, epyc])):
        fake_run(tmp_path / name, 0.4, tau=0.5, spread=0.4)
        record = {"invocations": [{"command": ["presdep"], "cpu": c} for c in cpus]}
        (tmp_path / name / "provenance.json").write_text(json.dumps(record))
    folders = [tmp_path / "off-the-shelf", tmp_path / "oc-sft"]
    table = study_table(folders)
    assert "Processors (provenance.json): AMD EPYC [avx2 avx512_bf16]." in table
    assert "not all computed on one kind" not in table
    old = {"invocations": [{"command": ["presdep"]}]}  # from before the CPU was recorded
    (tmp_path / "oc-sft" / "provenance.json").write_text(json.dumps(old))
    table = study_table(folders)
    assert (
        "Processors (provenance.json): AMD EPYC [avx2 avx512_bf16]. Not recorded for oc-sft"
        in table
    )
    assert "not all computed on one kind" not in table  # unknown is not another kind
    xeon = {"model": "Intel Xeon", "flags": ["avx2"]}
    other = {"invocations": [{"command": ["presdep"], "cpu": xeon}]}
    (tmp_path / "oc-sft" / "provenance.json").write_text(json.dumps(other))
    table = study_table(folders)
    assert "AMD EPYC [avx2 avx512_bf16]; Intel Xeon [avx2]." in table
    assert "oc-sft: Intel Xeon [avx2]" in table and "off-the-shelf: AMD EPYC" in table


def test_study_table_sums_the_psi_cpu_seconds_only_when_every_query_has_them(tmp_path):
    from presentation_dependence.runners.costs import record_unit_cost

    for name in ("off-the-shelf", "bsc", "resumed"):
        fake_run(tmp_path / name, 0.4, tau=0.5, spread=0.4)
    for q, cpu in (("q1", 100.0), ("q2", 120.0), ("q3", 90.5)):  # e.g. two processes, resumed
        record_unit_cost(tmp_path / "bsc", "psi", q, 3, cpu + 5, cpu)
    record_unit_cost(tmp_path / "resumed", "psi", "q3", 3, 10.0, 9.0)  # begun before costs
    table = study_table([tmp_path / n for n in ("off-the-shelf", "bsc", "resumed")])
    assert "CPU s (PSI, all queries) |" in table.splitlines()[0]
    rows = {ln.split(" | ")[0][2:]: ln for ln in table.splitlines()[2:5]}  # the scorer rows
    assert rows["bsc"].endswith("| 310 |")  # 100 + 120 + 90.5
    assert rows["off-the-shelf"].endswith("| — |") and rows["resumed"].endswith("| — |")
