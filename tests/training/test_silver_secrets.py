"""Issue 38 (9): ``presdep silver`` keeps secrets off disk as ``presdep run`` does.

The header's command line is redacted (as ``provenance.json`` is), and a query or passage text
holding a secret is refused before anything holding it is written (the texts are results).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from presentation_dependence.cli import main
from presentation_dependence.data.smoke import build_smoke_fixture
from presentation_dependence.io.fixture import read_fixture, write_fixture
from presentation_dependence.records import Query, RerankRequest
from tests.training.conftest import student_raw

TOKEN = "hf_SILVER_SENTINEL_0123456789"


def _config(root: Path, fixture: Path, tiny_model: str) -> Path:
    silver = {
        "teacher": {"reranker_class": "IdentityReranker"},
        "num_orders": 2,
        "data": [{"dataloader_class": "FixtureLoader", "path": str(fixture), "max_queries": 3}],
    }
    body = student_raw(tiny_model, root / "out" / "silver.jsonl", root / "out" / "student")
    body["silver"] = {**body["silver"], **silver}
    path = root / "train.yaml"
    path.write_text(yaml.safe_dump(body), encoding="utf-8")
    return path


def _holding(folder: Path, value: str) -> list[str]:
    return [
        str(p)
        for p in folder.rglob("*")
        if value in p.name or (p.is_file() and value.encode() in p.read_bytes())
    ]


def test_the_header_redacts_the_command_line(tmp_path, tiny_model, monkeypatch):
    """``-o "description=x $HF_TOKEN"`` put the token into the silver file's header."""
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    cfg = _config(tmp_path, build_smoke_fixture(tmp_path / "data"), tiny_model)
    assert main(["silver", str(cfg), "-o", f"description=pasted {TOKEN}"]) == 0
    silver = tmp_path / "out" / "silver.jsonl"
    header = json.loads(silver.read_text(encoding="utf-8").splitlines()[0])
    assert header["provenance"]["command"][-1] == "description=pasted <redacted:HF_TOKEN>"
    assert header["num_queries"] == 3
    assert not _holding(tmp_path / "out", TOKEN)
    # the redacted header still names this config: a rerun keeps the file
    before = silver.read_bytes()
    assert main(["silver", str(cfg), "-o", f"description=pasted {TOKEN}"]) == 0
    assert silver.read_bytes() == before


def test_a_secret_in_the_config_is_redacted_and_the_file_still_kept(
    tmp_path, tiny_model, monkeypatch
):
    """The header's config (here a data path holding the value) is redacted, and compared
    redacted: a rerun of the same config keeps the file instead of calling it another one's."""
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    cfg = _config(tmp_path, build_smoke_fixture(tmp_path / TOKEN), tiny_model)
    assert main(["silver", str(cfg)]) == 0
    silver = tmp_path / "out" / "silver.jsonl"
    header = json.loads(silver.read_text(encoding="utf-8").splitlines()[0])
    assert header["data"][0]["path"].startswith(str(tmp_path / "<redacted:HF_TOKEN>"))
    assert not _holding(tmp_path / "out", TOKEN)
    before = silver.read_bytes()
    assert main(["silver", str(cfg)]) == 0
    assert silver.read_bytes() == before


@pytest.mark.parametrize("where", ["query text", "passage text"])
def test_a_secret_in_the_texts_is_refused(tmp_path, tiny_model, monkeypatch, caplog, where):
    """The texts are written into the silver file: refused (exit 2, naming the variable, never
    its value) and nothing holding the value written, as ``presdep run`` refuses them."""
    monkeypatch.setenv("OPENAI_API_KEY", TOKEN)
    requests, qrels = read_fixture(build_smoke_fixture(tmp_path / "data"))
    r1 = requests[1]
    if where == "query text":
        r1 = RerankRequest(Query(r1.query.qid, f"what is {TOKEN}"), r1.candidates)
    else:
        c = r1.candidates[2]
        r1 = RerankRequest(r1.query, (*r1.candidates[:2], type(c)(c.docid, TOKEN, c.rank, c.score)))
    fixture = write_fixture(tmp_path / "leak.jsonl", [requests[0], r1, *requests[2:]], qrels)
    cfg = _config(tmp_path, fixture, tiny_model)
    assert main(["silver", str(cfg)]) == 2
    assert "OPENAI_API_KEY" in caplog.text and TOKEN not in caplog.text
    assert not (tmp_path / "out" / "silver.jsonl").exists()
    assert not _holding(tmp_path / "out", TOKEN)
