"""The report on real PSI run folders (IdentityReranker on the smoke fixture, and the tiny model)."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import yaml

from presentation_dependence.cli import main as cli_main
from presentation_dependence.config import load_experiment_config
from presentation_dependence.data import load_dataset
from presentation_dependence.data.smoke import build_smoke_fixture
from presentation_dependence.io.rankllm_json import write_rankllm_json
from presentation_dependence.io.trec import write_qrels
from presentation_dependence.report import figures, write_report
from presentation_dependence.report.render import load_psi_run, slot_axis_label, slot_series
from presentation_dependence.robustness.external import write_presentation_runs
from presentation_dependence.robustness.store import NULL


def _psi_run(tmp_path, name: str, reranker: dict) -> str:
    fixture = build_smoke_fixture(tmp_path / "data")
    cfg = tmp_path / f"{name}.yaml"
    cfg.write_text(
        yaml.safe_dump(
            {
                "reranker": reranker,
                "data": {"dataloader_class": "FixtureLoader", "path": str(fixture), "top_k": 6},
                "robustness": {
                    "num_presentations": 3,
                    "null_repeats": 2,
                    "bootstrap_resamples": 200,
                },
            }
        )
    )
    run = tmp_path / f"run-{name}"
    assert cli_main(["psi", str(cfg), "--run-dir", str(run)]) == 0
    return str(run)


def test_report_has_table_plots_and_paired_tests(tmp_path, tiny_model):
    a = _psi_run(tmp_path, "identity", {"reranker_class": "IdentityReranker"})
    b = _psi_run(
        tmp_path,
        "tiny",
        {
            "reranker_class": "GradeReranker",
            "model_name": tiny_model,
            "dtype": "float32",
            "device": "cpu",
        },
    )
    md, page = write_report([a, b], tmp_path / "report")
    text = md.read_text()
    # Labelled by folder; the config (system) is named beside it.
    assert "| `run-identity` | random_shuffle |" in text
    assert "| `run-tiny` | same_order (null) |" in text and "(tiny)" in text
    assert "Paired over queries against `run-identity`" in text
    runs = [load_psi_run(Path(d)) for d in (a, b)]
    assert [r["grades"] for r in runs] == [False, True]  # identity: 1/rank; tiny: a readout
    assert slot_axis_label(runs) == "mean score"
    assert slot_axis_label(runs[1:]) == "mean score (expected grade)"
    for png in ("presentations.png", "tau_psi.png", "slot_means.png"):
        data = (tmp_path / "report" / png).read_bytes()
        assert data.startswith(b"\x89PNG") and len(data) > 2000
    html = page.read_text()
    images = re.findall(r'src="data:image/png;base64,([^"]+)"', html)
    assert len(images) == 3
    assert all(base64.b64decode(i).startswith(b"\x89PNG") for i in images)
    assert "<table>" in html and "τ-PSI" in html
    # Same inputs, same bytes (seeded paired tests, no timestamps in the page).
    md2, _ = write_report([a, b], tmp_path / "again")
    assert md2.read_text() == text


def test_report_refuses_folder_without_psi(tmp_path):
    assert cli_main(["eval", "--run-dir", str(tmp_path)]) == 2
    from presentation_dependence.errors import PresdepError

    try:
        write_report([tmp_path], tmp_path / "r")
    except PresdepError as e:
        assert "presdep psi" in str(e)
    else:
        raise AssertionError("expected PresdepError")


def test_student_runs_name_their_adapter():
    from presentation_dependence.report.render import _system

    assert _system("psi", {}) == "psi"
    assert _system("psi", {"adapter_path": "runs/self-distill/perm-aug/adapter"}) == "psi+perm-aug"
    assert _system("psi", {"adapter_path": "out/lambda-1"}) == "psi+lambda-1"


def _psi_runs_folders(tmp_path: Path, names: tuple[str, ...]) -> list[str]:
    """``presdep psi-runs`` folders, one per name, all from one candidates file (rank_llm JSON):
    the identity run's own scores, as another system's runs."""
    run = Path(_psi_run(tmp_path, "identity", {"reranker_class": "IdentityReranker"}))
    data = load_dataset(load_experiment_config(tmp_path / "identity.yaml").data)
    cands = write_rankllm_json(data.requests, tmp_path / "candidates.json", layout="candidates")
    qrels = write_qrels(data.qrels, tmp_path / "qrels.txt")
    written = write_presentation_runs(run / "psi", tmp_path / "runs")
    argv = ["psi-runs", str(run / "psi" / "presentations.json"), "--candidates", str(cands)]
    argv += ["--qrels", str(qrels)]
    for var, paths in written.items():
        argv += ["--runs", var, *map(str, paths)]
    for name in names:
        assert cli_main([*argv, "--out", str(tmp_path / name)]) == 0
    return [str(tmp_path / name) for name in names]


def test_two_psi_runs_folders_of_one_candidates_file_draw_two_lines(tmp_path, caplog):
    a, b = _psi_runs_folders(tmp_path, ("system-a", "system-b"))
    md, _ = write_report([a, b], tmp_path / "report")
    text = md.read_text()
    runs = [load_psi_run(Path(d)) for d in (a, b)]
    variants = [v for v in runs[0]["metrics"]["variants"] if v != NULL]
    for label in ("system-a", "system-b"):
        assert all(f"| `{label}` | {var} |" in text for var in variants)
    series = slot_series(runs)
    assert sorted(series) == sorted(
        f"{x} / {v}" for x in ("system-a", "system-b") for v in variants
    )
    ax = figures.slot_means_figure(series, slot_axis_label(runs)).axes[0]
    assert len(ax.get_lines()) == 2 * len(variants)
    assert ax.get_ylabel() == "mean score"  # another system's run scores, not expected grades
    # --label names them; one label for two folders (or one folder twice) is refused.
    base = ["report", a, b, "--out", str(tmp_path / "r2")]
    assert cli_main([*base, "--label", "RankZephyr", "--label", "FirstMistral"]) == 0
    text = (tmp_path / "r2" / "report.md").read_text()
    assert "| `RankZephyr` |" in text and "| `FirstMistral` |" in text
    assert cli_main([*base, "--label", "X", "--label", "X"]) == 2
    assert "have the same label 'X'" in caplog.text and "--label" in caplog.text
    assert cli_main([*base, "--label", "X"]) == 2
    assert "1 --label for 2 run folders" in caplog.text
    assert cli_main(["report", a, a, "--out", str(tmp_path / "r3")]) == 2


def test_folders_of_one_name_are_told_apart_by_their_parents(tmp_path):
    from presentation_dependence.report.render import run_labels

    dirs = [tmp_path / "x" / "psi", tmp_path / "y" / "psi", tmp_path / "z"]
    assert run_labels(dirs) == ["x/psi", "y/psi", "z"]
    assert run_labels(dirs, ["a", "b", "c"]) == ["a", "b", "c"]
