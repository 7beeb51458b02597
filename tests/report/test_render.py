"""The report on real PSI run folders (IdentityReranker on the smoke fixture, and the tiny model)."""

from __future__ import annotations

import base64
import re

import yaml

from presentation_dependence.cli import main as cli_main
from presentation_dependence.data.smoke import build_smoke_fixture
from presentation_dependence.report import write_report


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
    assert "| `identity` | random_shuffle |" in text and "| `tiny` | same_order (null) |" in text
    assert "Paired over queries against `identity`" in text
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


def test_student_runs_get_their_adapter_in_the_label():
    from presentation_dependence.report.render import _label

    assert _label({"id": "psi", "reranker": {}}) == "psi"
    cfg = {"id": "psi", "reranker": {"adapter_path": "runs/self-distill/perm-aug/adapter"}}
    assert _label(cfg) == "psi+perm-aug"
    assert _label({"id": "psi", "reranker": {"adapter_path": "out/lambda-1"}}) == "psi+lambda-1"
