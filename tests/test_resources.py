"""``presdep init``: the shipped configs and fixture, copied out; ``presdep configs`` anywhere."""

from __future__ import annotations

from pathlib import Path

import pytest

from presentation_dependence.cli import main
from presentation_dependence.resources import data_root, shipped_configs_dir


def test_init_copies_configs_and_fixture_and_refuses_to_overwrite(tmp_path: Path, caplog) -> None:
    assert (shipped_configs_dir() / "example-noveleval-smollm2.yaml").is_file()
    dest = tmp_path / "work"
    assert main(["init", str(dest)]) == 0
    assert (dest / "configs/experiments/example-noveleval-smollm2.yaml").read_bytes() == (
        shipped_configs_dir() / "example-noveleval-smollm2.yaml"
    ).read_bytes()
    assert (dest / "fixtures/noveleval/noveleval.jsonl").is_file()
    assert main(["init", str(dest)]) == 2
    assert "--force" in caplog.text
    assert main(["init", str(dest), "--force"]) == 0
    assert main(["init", str(data_root())]) == 2


def test_configs_outside_a_checkout_lists_the_installed_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["configs"]) == 0
    assert "example-noveleval-smollm2" in capsys.readouterr().out
