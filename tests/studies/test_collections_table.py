"""The multi-collection table (``presdep study collections``) on synthetic run folders with known
per-query figures: macro average, stratified CI, the excluded axis, the verdict, cost, CLI."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from presentation_dependence.cli import main
from presentation_dependence.runners.costs import record_unit_cost
from presentation_dependence.studies.collections_figures import (
    load_collections,
    metric_cells,
    paired_tests,
)
from presentation_dependence.studies.collections_table import collections_table
from tests.training.conftest import fake_run

FOUR = {"q1": -0.03, "q2": -0.01, "q3": 0.01, "q4": 0.03}  # c2 has four queries, offsets mean 0

# collection -> scorer -> (nDCG@10 given, τ-PSI, score spread); shuffled nDCG is given − 0.05
FIGURES = {
    "c1": {"off-the-shelf": (0.4, 0.5, 0.4), "order-averaged": (0.45, 0.3, 0.35),
           "oc-sft": (0.5, 0.2, 0.3)},
    "c2": {"off-the-shelf": (0.4, 0.4, 0.4), "order-averaged": (0.42, 0.3, 0.35),
           "oc-sft": (0.45, 0.24, 0.3)},
    # another axis (DL19's alternative first stage): OC-SFT halves τ-PSI only by flattening
    "dl19-splade": {"off-the-shelf": (0.4, 0.5, 0.4), "order-averaged": (0.4, 0.3, 0.3),
                    "oc-sft": (0.5, 0.1, 0.1)},
}  # fmt: skip
TOKENS = {"c1": 1000.0, "c2": 1200.0, "dl19-splade": 1100.0}
OC_SFT_CPU = {"c1": (10.0, 20.0, 30.0), "c2": (5.0, 5.0, 5.0, 5.0), "dl19-splade": (1.0, 1.0, 1.0)}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    for coll, scorers in FIGURES.items():
        offsets = FOUR if coll == "c2" else {"q1": -0.01, "q2": 0.0, "q3": 0.01}
        for scorer, (ndcg, tau, spread) in scorers.items():
            folder = tmp_path / "runs" / coll / scorer
            tokens = TOKENS[coll] if scorer == "oc-sft" else None
            fake_run(folder, ndcg, tau, spread, offsets=offsets, tokens=tokens)
            (folder / "resolved_config.yaml").write_text("robustness:\n  retain_top_k: 10\n")
        for q, cpu in zip(offsets, OC_SFT_CPU[coll], strict=True):
            record_unit_cost(tmp_path / "runs" / coll / "oc-sft", "psi", q, len(offsets), cpu, cpu)
    (tmp_path / "runs" / "notes").mkdir()  # a folder without run folders is not a collection
    return tmp_path / "runs"


def _row(text: str, table: str, scorer: str) -> str:
    """The ``scorer`` row of the table under the bold title ``table``."""
    section = text.split(f"**{table}", 1)[1]
    return next(ln for ln in section.splitlines() if ln.startswith(f"| {scorer} |"))


def test_the_average_is_the_macro_mean_over_the_averaged_collections(root: Path) -> None:
    c = load_collections(root, ["c1", "c2"])
    assert c.names == ("c1", "c2", "dl19-splade") and c.average == ("c1", "c2")
    assert c.scorers == ("off-the-shelf", "order-averaged", "oc-sft")
    cells = metric_cells(c)
    avg = cells["tau_psi", "oc-sft", "average"]
    # (0.2 + 0.24) / 2; the pooled mean over the 7 queries would be (3·0.2 + 4·0.24) / 7
    assert avg.mean == pytest.approx(0.22) and avg.queries == 7
    assert avg.mean != pytest.approx((3 * 0.2 + 4 * 0.24) / 7)
    # the excluded axis (τ-PSI 0.1) is not in it; with every collection it is
    every = metric_cells(load_collections(root))
    assert every["tau_psi", "oc-sft", "average"].mean == pytest.approx((0.2 + 0.24 + 0.1) / 3)
    # nDCG@10 in the given order: metrics.json's per-query values (0.49, 0.5, 0.51), its CI
    # resampled from them
    given = cells["ndcg10_given", "oc-sft", "c1"]
    assert given.mean == pytest.approx(0.5) and 0.49 <= given.ci_low <= given.ci_high <= 0.51
    text = collections_table(root, ["c1", "c2"])
    head = "| scorer | c1 | c2 | dl19-splade (not averaged) | average (2 collections) |"
    assert head in text and "notes" not in text
    row = _row(text, "τ-PSI", "oc-sft")
    assert row.startswith("| oc-sft | 0.200 [0.100, 0.300] | 0.240 [0.140, 0.340] | 0.100 [")
    assert "| 0.220 [" in row
    assert "**top-10 Jaccard" in text


def test_the_average_ci_is_stratified_and_seeded(root: Path) -> None:
    c = load_collections(root, ["c1", "c2"])
    cells = metric_cells(c, seed=0)
    avg = cells["tau_psi", "oc-sft", "average"]
    # per query: c1 0.19, 0.20, 0.21; c2 0.21, 0.23, 0.25, 0.27. Resampling within each
    # collection, the macro mean stays in [(0.19 + 0.21)/2, (0.21 + 0.27)/2] = [0.20, 0.24]
    assert avg.ci_low is not None and avg.ci_high is not None
    assert 0.20 - 1e-12 <= avg.ci_low < avg.mean < avg.ci_high <= 0.24 + 1e-12
    assert metric_cells(c, seed=0) == cells
    assert metric_cells(c, seed=1)["tau_psi", "oc-sft", "average"] != avg


def test_paired_tests_per_collection_and_pooled(root: Path) -> None:
    c = load_collections(root, ["c1", "c2"])
    tests = {(t.a, t.b, t.scope, t.metric): t for t in paired_tests(c)}
    c2 = tests["oc-sft", "off-the-shelf", "c2", "ndcg_mean"]
    assert (c2.queries, c2.mean_diff) == (4, pytest.approx(0.05))
    pooled = tests["oc-sft", "off-the-shelf", "pooled", "ndcg_mean"]
    # constant differences 0.1 (c1) and 0.05 (c2): macro 0.075, no spread, p = 1/2001; sign
    # flips over all 2^7 patterns: only all-plus reaches 0.075, p = 2 · 1/128
    assert (pooled.queries, pooled.collections) == (7, 2)
    assert (pooled.mean_diff, pooled.ci_low, pooled.ci_high) == pytest.approx((0.075,) * 3)
    assert pooled.p_value == pytest.approx(1 / 2001)
    assert pooled.permutation_p == pytest.approx(2 / 128)
    tau = tests["oc-sft", "order-averaged", "pooled", "tau_psi"]
    assert tau.mean_diff == pytest.approx(((0.2 - 0.3) + (0.24 - 0.3)) / 2)
    # the excluded axis is tested on its own, never pooled (the pooled 7 queries are c1 + c2)
    assert tests["oc-sft", "off-the-shelf", "dl19-splade", "tau_psi"].queries == 3
    row = "| oc-sft − off-the-shelf | pooled (2 collections) | ndcg_mean | 7 | +0.075 [+0.075, "
    assert row + "+0.075] | 0.0005 | 0.0156 |" in collections_table(root, ["c1", "c2"])


def test_a_scorer_missing_on_an_averaged_collection(root: Path) -> None:
    shutil.rmtree(root / "c2" / "order-averaged")
    text = collections_table(root, ["c1", "c2"], pairs=[("oc-sft", "order-averaged")])
    assert _row(text, "τ-PSI", "order-averaged").endswith("| — |")  # no average without c2
    assert "| oc-sft − order-averaged | pooled (1 of 2 collections) | tau_psi | 3 |" in text
    assert "**Not judged** on the average over 2 collections (c1, c2)" in text
    assert "c2: oc-sft or order-averaged not run" in text


def test_the_verdict_names_the_collections_where_it_fails(root: Path) -> None:
    text = collections_table(root, ["c1", "c2"])
    assert (
        "**Holds** on the average over 2 collections (c1, c2): oc-sft's τ-PSI is 0.49 of "
        "off-the-shelf's (halved), no collapse (score spread 0.300 against 0.400, tied share "
        "0.000), nDCG@10 over the shuffles +0.075 [+0.075, +0.075] above off-the-shelf's"
    ) in text
    # c2: 0.24 / 0.40 = 0.60; the excluded axis: spread 0.1 < half of 0.4
    assert (
        "Collections where it does not hold: c2: τ-PSI 0.60 of off-the-shelf's: not halved — "
        "dl19-splade (not averaged): collapsed (score spread 0.100 against 0.400, tied share "
        "0.000)."
    ) in text
    against_student = collections_table(root, ["c1", "c2"], pairs=[("oc-sft", "order-averaged")])
    # (0.2 + 0.24) / (0.3 + 0.3) = 0.73
    assert "**Does not hold** on the average over 2 collections (c1, c2): τ-PSI 0.73" in (
        against_student
    )


def test_cost_sums_psi_cpu_seconds_over_collections(root: Path) -> None:
    text = collections_table(root)
    # 60 + 20 + 3 CPU s; tokens per presentation (1000 + 1200 + 1100) / 3
    assert "| oc-sft | 83 | c1 60, c2 20, dl19-splade 3 | 1100 |" in text
    assert "| off-the-shelf | — | c1 —, c2 —, dl19-splade — | — |" in text


def test_cost_ends_with_where_each_scorer_ran_and_says_when_a_gpu_did(root: Path) -> None:
    """The rows are labelled by provenance.json (runners/readback.py:recorded_cpus); the GPU's
    note appears only when some row was scored on a GPU."""
    xeon = {"model": "Intel Xeon", "flags": ["amx_bf16"]}
    for coll in FIGURES:
        for scorer in FIGURES[coll]:
            gpu = scorer == "oc-sft" and coll == "c1"
            inv = {"command": ["presdep"], "cpu": xeon, "reranker": {"device": "cpu"}}
            if gpu:
                inv["reranker"] = {"device": "cuda", "accelerator": "NVIDIA H200"}
            record = {"invocations": [inv]}
            (root / coll / scorer / "provenance.json").write_text(json.dumps(record))
    text = collections_table(root)
    gpu_label = "GPU NVIDIA H200 (cuda; host Intel Xeon [amx_bf16])"
    assert f"oc-sft: {gpu_label}, Intel Xeon [amx_bf16]" in text
    assert "off-the-shelf: Intel Xeon [amx_bf16]" in text
    assert "the GPU's own time is not in them" in text
    (root / "c1" / "oc-sft" / "provenance.json").write_text(
        json.dumps({"invocations": [{"command": ["presdep"], "cpu": xeon}]})
    )
    text = collections_table(root)
    assert "Processors (provenance.json): Intel Xeon [amx_bf16]." in text
    assert "GPU" not in text.split("Processors (provenance.json)", 1)[1]


def test_cli_writes_the_block(root: Path, tmp_path: Path, capsys) -> None:
    doc = tmp_path / "RESULTS.md"
    doc.write_text("# R\n\n<!-- collections-table:start -->\nOLD\n<!-- collections-table:end -->\n")
    args = ["study", "collections", str(root), "--average", "c1", "c2", "--doc", str(doc)]
    assert main(args) == 0
    want = collections_table(root, ["c1", "c2"])
    assert want in doc.read_text() and "OLD" not in doc.read_text()
    assert main(["study", "collections", str(root), "--pairs", "oc-sft:bsc"]) == 0
    assert "oc-sft's τ-PSI at most half of bsc's" in capsys.readouterr().out
    assert main(["study", "collections", str(root), "--pairs", "oc-sft"]) == 2
    assert main(["study", "collections", str(root), "--average", "c9"]) == 2
