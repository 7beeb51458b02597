"""The contract every registered judge keeps (as tests/rerankers/test_contract.py for rerankers).

Run over every judge registered by this package, on the tiny random model where it takes one:
one record per request in request order with the request's identity (item, placement, correct
slot, repeat), a verdict that is a slot of the prompt or a parse failure, deterministic reruns,
records that depend on their own request only (reversed requests give reversed records), a
batch-size override that keeps the identity of every record, an identity whose cache key is
stable, and records that round-trip through JSONL.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from presdep_tools.testing.chat_server import shared_completion_server_url
from presentation_dependence.judge import JUDGES, Judge, build_judge
from presentation_dependence.judge.items.records import read_records, write_records
from presentation_dependence.judge.parser import PARSE_OK
from presentation_dependence.judge.placement import make_requests
from tests.judge.conftest import make_items

BUILTIN = sorted(
    n for n in JUDGES.names() if JUDGES.get(n).__module__.startswith("presentation_dependence.")
)


def build(name: str, tiny_model: str) -> Judge:
    cls = JUDGES.get(name)
    fields = {f.name for f in dataclasses.fields(cls.config_cls)}
    kw: dict[str, object] = {}
    if "model_name" in fields:
        kw.update(model_name=tiny_model, device="cpu", dtype="float32")
    if "max_new_tokens" in fields:
        kw["max_new_tokens"] = 4
    if "base_url" in fields:  # a judge of a served model: the tiny model behind a loopback server
        kw = {"model_name": tiny_model, "max_new_tokens": 4}
        kw["base_url"] = shared_completion_server_url(tiny_model)
    return build_judge(name, cls.config_cls(**kw))


def test_the_builtin_judges_are_registered() -> None:
    assert {"transformers", "readout", "openai-completions", "scripted"} <= set(BUILTIN)


@pytest.mark.parametrize("name", BUILTIN)
def test_judge_contract(name: str, tiny_model: str, tmp_path: Path) -> None:
    judge = build(name, tiny_model)
    four = [dataclasses.replace(it, item_id=f"four-{it.item_id}") for it in make_items(1, 4)]
    reqs = make_requests(make_items(2, 2), "full", 0) + make_requests(four, "cyclic", 0)
    records = judge.judge(reqs)
    assert len(records) == len(reqs)
    for req, rec in zip(reqs, records, strict=True):
        assert rec.key == req.key and rec.n == req.n
        assert (rec.correct_slot, rec.source) == (req.correct_slot, req.item.source)
        assert rec.parsed == (rec.parse_status == PARSE_OK)
        assert rec.verdict_slot is None or 0 <= rec.verdict_slot < req.n
        assert rec.correct == (rec.verdict_slot == req.correct_slot)
    assert judge.judge(reqs) == records
    assert judge.judge(reqs[::-1])[::-1] == records
    assert [r.key for r in judge.judge(reqs, batch_size=3)] == [r.key for r in records]
    ident = judge.identity()
    assert ident.judge_class == name and ident.model_snapshot and ident.prompt_version
    assert ident.cache_key() == build(name, tiny_model).identity().cache_key()
    assert judge.describe()["judge_class"] == name
    path = write_records(tmp_path / "r.jsonl", records)
    assert read_records(path) == records
