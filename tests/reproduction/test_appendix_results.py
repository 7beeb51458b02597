"""The appendix map and its audit; the results index and record_result."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from presentation_dependence.cli import make_parser
from presentation_dependence.errors import ConfigError, PresdepError
from presentation_dependence.reproduction.appendix import audit, check_command, load_appendix
from presentation_dependence.reproduction.results_index import (
    INDEX,
    SCHEMA,
    load_index,
    record_result,
)

REPO = Path(__file__).resolve().parents[2]

COMMANDS = make_parser().get_default("presdep_commands")


def _script(rel: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(Path(rel).stem, REPO / rel)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_shipped_appendix_audits(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    appendix = load_appendix(REPO / "configs/reproduction/appendix.yaml")
    rows = {r.artifact.id: r for r in audit(appendix, REPO, COMMANDS)}
    assert (
        rows["tab-legal"].status == "not runnable" and "not distributed" in rows["tab-legal"].detail
    )
    assert all(r.status != "broken" for r in rows.values()), [r.detail for r in rows.values()]
    assert rows["tab-reranking-main"].status in ("blocked", "partial", "ready")
    assert "evaluated" in rows["tab-reranking-main"].detail
    monkeypatch.chdir(REPO)
    assert _script("scripts/study.py").main(["appendix", "audit", "--strict"]) == 0
    assert "summary:" in capsys.readouterr().out


def test_check_command(tmp_path: Path) -> None:
    (tmp_path / "s.py").write_text("")
    assert check_command("python s.py --x", tmp_path, COMMANDS) is None
    assert check_command("python missing.py", tmp_path, COMMANDS) == "no script missing.py"
    assert check_command("presdep psi", tmp_path, COMMANDS) is None
    assert check_command("presdep nope", tmp_path, COMMANDS) == "no 'presdep nope' subcommand"
    assert (
        check_command("presentation_dependence.metrics.measures:evaluate_run", tmp_path, COMMANDS)
        is None
    )
    assert "does not define" in (
        check_command("presentation_dependence.runners.evaluation:nope", tmp_path, COMMANDS) or ""
    )
    assert check_command("python -m presentation_dependence.cli", tmp_path, COMMANDS) is None
    assert "not on PATH" in (check_command("surely-not-a-command-xyz", tmp_path, COMMANDS) or "")


def _appendix(tmp_path: Path, artifacts: list[dict]) -> Path:
    path = tmp_path / "appendix.yaml"
    path.write_text(yaml.safe_dump({"artifacts": artifacts}))
    return path


def test_audit_is_honest(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "prog.py").write_text("")
    (tmp_path / "data.txt").write_text("")
    base = {"title": "t", "kind": "table", "analyzer": "python prog.py"}
    path = _appendix(
        tmp_path,
        [
            {
                **base,
                "id": "ok",
                "program": "python prog.py",
                "runnable": True,
                "data": ["data.txt"],
            },
            {**base, "id": "gone", "program": "python gone.py", "runnable": True},
            {**base, "id": "nodata", "program": "python prog.py", "runnable": True, "data": ["x"]},
            {**base, "id": "off", "program": "python prog.py", "runnable": False, "reason": "r"},
        ],
    )
    rows = {r.artifact.id: r for r in audit(load_appendix(path), tmp_path, COMMANDS)}
    assert rows["ok"].status == "ready"
    assert rows["gone"].status == "broken" and "no script gone.py" in rows["gone"].detail
    assert rows["nodata"].status == "blocked" and "data x is missing" in rows["nodata"].detail
    assert rows["off"].status == "not runnable" and "yet its program" in rows["off"].detail
    study = _script("scripts/study.py")
    assert study.main(["appendix", "audit", "--appendix", str(path), "--strict"]) in (0, 1)
    with pytest.raises(ConfigError, match="give a reason"):
        load_appendix(_appendix(tmp_path, [{**base, "id": "x", "program": "p", "runnable": False}]))
    with pytest.raises(ConfigError, match="Did you mean 'runnable'"):
        load_appendix(_appendix(tmp_path, [{**base, "id": "x", "program": "p", "runable": True}]))


def test_shipped_results_index_is_empty() -> None:
    assert load_index(REPO / INDEX) == []
    assert yaml.safe_load((REPO / INDEX).read_text())["schema"] == SCHEMA


def _run_folder(folder: Path) -> Path:
    folder.mkdir(parents=True)
    cfg = {"id": "cfg-x", "seed": 3, "description": "d", "reranker": {"reranker_class": "IdentityReranker"},
           "data": {"dataloader_class": "FixtureLoader", "path": "nowhere.jsonl", "top_k": 5}}  # fmt: skip
    (folder / "resolved_config.yaml").write_text(yaml.safe_dump(cfg))
    prov = {"invocations": [{"phase": "run", "git": {"commit": "abc123", "dirty": False},
            "seeds": {"seed": 3}, "reranker": {"reranker_class": "IdentityReranker", "extra": 1}}]}  # fmt: skip
    (folder / "provenance.json").write_text(json.dumps(prov))
    metrics = {"relevance_level": 1, "num_queries": 2, "mean": {"ndcg@10": 0.51234}}
    (folder / "metrics.json").write_text(json.dumps(metrics))
    return folder


def test_record_result(tmp_path: Path) -> None:
    folder = _run_folder(tmp_path / "runs" / "a")
    index = tmp_path / "index.yaml"
    e = record_result(folder, index=index, artifact="tab-x", note="n")
    assert (e["config_id"], e["commit"], e["seeds"], e["num_queries"]) == (
        "cfg-x",
        "abc123",
        {"seed": 3},
        2,
    )
    assert e["metrics"] == {"ndcg@10": 0.5123} and e["reranker"] == {
        "reranker_class": "IdentityReranker"
    }
    record_result(folder, index=index)  # replaces, does not duplicate
    record_result(_run_folder(tmp_path / "runs" / "b"), index=index)
    assert [x["run_dir"] for x in load_index(index)] == [
        str(tmp_path / "runs" / "b"),
        str(folder),
    ] or len(load_index(index)) == 2
    with pytest.raises(PresdepError, match="presdep eval"):
        (folder / "metrics.json").unlink()
        record_result(folder, index=index)
    index.write_text(index.read_text().replace("config_id:", "confg_id:", 1))
    with pytest.raises(ConfigError, match="unknown keys"):
        load_index(index)
    assert (
        _script("scripts/record_result.py").main([str(tmp_path / "nope"), "--index", str(index)])
        == 2
    )
