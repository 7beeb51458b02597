"""Issue 16 (3): judge and gate outputs, and tracebacks, never hold a secret."""

from __future__ import annotations

import json
from pathlib import Path

from presentation_dependence.cli import main

from .test_cli import config

TOKEN = "hf_SENTINEL_0123456789"


def _files_with(folder: Path, value: str) -> list[str]:
    return [str(p) for p in folder.rglob("*") if p.is_file() and value.encode() in p.read_bytes()]


def test_judge_and_gate_outputs_redact_overrides(tmp_path, items_file, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    cfg = config(tmp_path, items_file)
    override = ["--override", f"description=pasted {TOKEN}"]
    assert main(["judge", str(cfg), "--out", str(tmp_path / "j"), *override]) == 0
    assert (
        main(
            [
                "judge",
                str(cfg),
                "--out",
                str(tmp_path / "r"),
                *override,
                "--override",
                "task=rank",
                "--override",
                "reranker={reranker_class: IdentityReranker}",
            ]
        )
        == 0
    )
    verdict = tmp_path / "g" / "verdict.json"
    rc = main(["gate", str(cfg), "--verdict", str(verdict), "--k", "2", *override])
    assert rc in (0, 1)
    for folder in ("j", "r", "g"):
        assert not _files_with(tmp_path / folder, TOKEN), folder
    assert "<redacted:HF_TOKEN>" in (tmp_path / "j" / "resolved_config.yaml").read_text()
    v = json.loads(verdict.read_text())
    assert "<redacted:HF_TOKEN>" in v["config"]["description"]
    assert any("<redacted:HF_TOKEN>" in a for a in v["command"])


def test_debug_tracebacks_are_redacted(tmp_path, monkeypatch, capsys):
    """An internal error's traceback (shown with --debug) passes through redaction."""
    import presentation_dependence.runners as runners

    monkeypatch.setenv("HF_TOKEN", TOKEN)

    def boom(*a, **k):
        raise RuntimeError(f"internal failure near {TOKEN}")

    monkeypatch.setattr(runners.EvalManager, "evaluate", boom)
    (tmp_path / "r").mkdir()
    rc = main(["--debug", "eval", "--run-dir", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert rc == 3
    assert "Traceback" in err and "<redacted:HF_TOKEN>" in err and TOKEN not in err
