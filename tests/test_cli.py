from pathlib import Path

from presentation_dependence.cli import main

REPO = Path(__file__).resolve().parents[1]


def test_configs_lists_shipped_configs(capsys):
    assert main(["configs", "--root", str(REPO / "configs" / "experiments")]) == 0
    assert "_smoke-fixture" in capsys.readouterr().out


def test_user_errors_exit_2(tmp_path, caplog):
    bad = tmp_path / "bad.yaml"
    bad.write_text("reranker: {reranker_class: Nope}\n", encoding="utf-8")
    assert main(["run", str(bad), "--run-dir", str(tmp_path / "r")]) == 2
    assert "unknown reranker_class 'Nope'" in caplog.text
    assert main(["run", str(tmp_path / "missing.yaml")]) == 2
    assert main(["eval", "--run-dir", str(tmp_path / "nowhere")]) == 2
