"""Issue 16 (3, 7): no secret on disk, and redaction never rewrites a result record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from presentation_dependence.cli import main as cli_main
from presentation_dependence.data.smoke import build_smoke_fixture
from presentation_dependence.io.fixture import read_fixture, write_fixture
from presentation_dependence.records import Query, RerankRequest

TOKEN = "hf_SENTINEL_0123456789"


def _config(root: Path, fixture: Path) -> Path:
    body = {
        "reranker": {"reranker_class": "IdentityReranker"},
        "data": {"dataloader_class": "FixtureLoader", "path": str(fixture)},
        "eval": {"measures": ["ndcg@10"]},
    }
    path = root / "exp.yaml"
    path.write_text(yaml.safe_dump(body), encoding="utf-8")
    return path


def _on_disk(folder: Path, value: str) -> list[str]:
    """Every file whose name or bytes hold ``value``."""
    return [
        str(p)
        for p in folder.rglob("*")
        if value in str(p) or (p.is_file() and value.encode() in p.read_bytes())
    ]


def test_identifier_looking_env_values_do_not_rewrite_results(tmp_path, monkeypatch):
    """A qid equal to an ordinary env value stays a qid: every query is evaluated."""
    monkeypatch.setenv("MY_KEYRING_PROVIDER", "smoke-1")
    monkeypatch.setenv("SOME_TOKEN", "smoke-1")
    fixture = build_smoke_fixture(tmp_path / "data")
    run_dir = tmp_path / "run"
    assert (
        cli_main(["run", str(_config(tmp_path, fixture)), "--run-dir", str(run_dir), "--eval"]) == 0
    )
    assert "smoke-1 Q0" in (run_dir / "run.trec").read_text()
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["num_queries"] == 6 and "smoke-1" in metrics["per_query"]
    assert not _on_disk(run_dir, "<redacted")


def test_a_secret_inside_the_data_is_refused_not_written(tmp_path, monkeypatch, caplog):
    """A credential in a qid (file name, qrels.txt, run.trec) stops the run before any write."""
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    src = build_smoke_fixture(tmp_path / "data")
    requests, qrels = read_fixture(src)
    leaky = RerankRequest(Query(f"q-{TOKEN}", "leaky query"), requests[0].candidates)
    judged = {**qrels.judgements, leaky.query.qid: dict(qrels.judgements["smoke-1"])}
    fixture = write_fixture(tmp_path / "leak.jsonl", [leaky, *requests[1:]], type(qrels)(judged))
    run_dir = tmp_path / "run"
    rc = cli_main(["run", str(_config(tmp_path, fixture)), "--run-dir", str(run_dir), "--eval"])
    assert rc == 2
    assert "HF_TOKEN" in caplog.text and TOKEN not in caplog.text
    assert not _on_disk(run_dir, TOKEN)


@pytest.mark.parametrize("where", ["query text", "passage text"])
def test_a_secret_in_texts_is_refused(tmp_path, monkeypatch, where):
    """Query and passage texts are part of the result records: refused, never rewritten."""
    monkeypatch.setenv("OPENAI_API_KEY", TOKEN)
    requests, qrels = read_fixture(build_smoke_fixture(tmp_path / "data"))
    r0 = requests[0]
    if where == "query text":
        r0 = RerankRequest(Query(r0.query.qid, f"what is {TOKEN}"), r0.candidates)
    else:
        c = r0.candidates[0]
        r0 = RerankRequest(r0.query, (type(c)(c.docid, TOKEN, c.rank, c.score), *r0.candidates[1:]))
    fixture = write_fixture(tmp_path / "leak.jsonl", [r0, *requests[1:]], qrels)
    run_dir = tmp_path / "run"
    assert cli_main(["run", str(_config(tmp_path, fixture)), "--run-dir", str(run_dir)]) == 2
    assert not _on_disk(run_dir, TOKEN)
