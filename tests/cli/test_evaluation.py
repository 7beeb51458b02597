"""``presdep eval RUN QRELS -m ...``: trec_eval-style evaluation of any TREC run file."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from presentation_dependence.cli import main
from presentation_dependence.config import EvalConfig
from presentation_dependence.io.trec import read_qrels, read_run
from presentation_dependence.runners import evaluate_run
from tests.cli.conftest import files_under, load_script


def _table(out: str) -> dict[tuple[str, str], str]:
    rows = [line.split("\t") for line in out.splitlines()]
    return {(name.strip(), qid): value for name, qid, value in rows}


def test_eval_any_run_file_on_dl19(shared_data: Path, tmp_path: Path, capsys) -> None:
    folder = shared_data / "trec-dl19-passage"
    run, qrels = folder / "bm25_top100_dl19.trec", folder / "qrels.dl19-passage.txt"
    out_json = tmp_path / "m.json"
    argv = ["eval", str(run), str(qrels), "-m", "RR@10", "-m", "AP", "-l", "2", "-q"]
    assert main([*argv, "--json", str(out_json)]) == 0
    table = _table(capsys.readouterr().out)
    want = evaluate_run(
        read_run(run),
        read_qrels(qrels),
        EvalConfig(measures=["RR@10", "AP"], relevance_level=2),
    )
    assert table["num_q", "all"] == "43"
    for name in ("RR@10", "AP", "Judged@10"):
        assert table[name, "all"] == f"{want['mean'][name]:.4f}"
        assert table[name, "1037798"] == f"{want['per_query']['1037798'][name]:.4f}"
    saved = json.loads(out_json.read_text())
    assert saved["mean"] == want["mean"] and saved["measures"]["AP"] == "AP(rel=2)"
    assert saved["run"] == str(run)


def test_eval_default_measures_and_unjudged_warning(tmp_path: Path, capsys, caplog) -> None:
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 a 1 2.0 t\nq1 Q0 b 2 1.0 t\nq9 Q0 z 1 1.0 t\n")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 a 1\n")
    assert main(["eval", str(run), str(qrels), "--judged-k", "0"]) == 0
    table = _table(capsys.readouterr().out)
    assert {name for name, _ in table} == {"num_q", "ndcg@10", "map", "mrr"}
    assert table["mrr", "all"] == "1.0000"
    assert "q9" in caplog.text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["eval", "RUNFILE"], "give RUN QRELS"),
        (["eval", "RUNFILE", "QRELS", "--run-dir", "x"], "not both"),
        (["eval", "RUNFILE", "missing.txt"], "is not a file"),
        (["eval", "RUNFILE", "QRELS", "-m", "mrr@1O"], "unknown measure"),
    ],
)
def test_eval_usage_errors_exit_2(tmp_path: Path, caplog, args: list[str], message: str) -> None:
    run, qrels = tmp_path / "run.trec", tmp_path / "qrels.txt"
    run.write_text("q1 Q0 a 1 2.0 t\n")
    qrels.write_text("q1 0 a 1\n")
    subst = {"RUNFILE": str(run), "QRELS": str(qrels), "missing.txt": str(tmp_path / "no.txt")}
    assert main([subst.get(a, a) for a in args]) == 2
    assert message in caplog.text


def test_eval_with_run_and_qrels_swapped_says_so(tmp_path: Path, caplog) -> None:
    run, qrels = tmp_path / "run.trec", tmp_path / "qrels.txt"
    run.write_text("q1 Q0 a 1 2.0 t\n")
    qrels.write_text("q1 0 a 1\n")
    assert main(["eval", str(qrels), str(run)]) == 2
    assert f"{qrels}:1: expected 6 columns, got 4" in caplog.text
    assert "looks like TREC qrels" in caplog.text and "swapped?" in caplog.text


def test_report_writes_the_files_of_its_script(psi_runs: Path, tmp_path: Path) -> None:
    runs = [str(psi_runs / "off-the-shelf"), str(psi_runs / "oc-sft")]
    assert main(["report", *runs, "--out", str(tmp_path / "cli"), "--seed", "3"]) == 0
    script = load_script("scripts/report.py")
    assert script.main([*runs, "--out", str(tmp_path / "script"), "--seed", "3"]) == 0
    names = files_under(tmp_path / "cli")
    assert {"report.md", "report.html", "tau_psi.png"} <= set(names)
    assert names == files_under(tmp_path / "script")
    md = (tmp_path / "cli" / "report.md").read_text()
    assert md == (tmp_path / "script" / "report.md").read_text() and "random_shuffle" in md


def test_report_without_matplotlib_names_the_extra(
    psi_runs: Path, tmp_path: Path, caplog, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("matplotlib", "matplotlib.pyplot"):
        monkeypatch.setitem(sys.modules, name, None)  # import matplotlib -> ImportError
    out = tmp_path / "r"
    assert main(["report", str(psi_runs / "off-the-shelf"), "--out", str(out)]) == 2
    assert "internal error" not in caplog.text
    assert "the report's plots needs the 'matplotlib' package" in caplog.text
    assert "pip install 'presentation-dependence[analysis]'" in caplog.text
    assert not out.exists()


def test_report_of_a_folder_without_psi_is_bad_input(tmp_path: Path, caplog) -> None:
    assert main(["report", str(tmp_path), "--out", str(tmp_path / "r")]) == 2
    assert "presdep psi" in caplog.text
