"""ClosedModelGenBscReranker against a real loopback HTTP server, with injected faults."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from presdep_tools.testing.chat_server import ChatServer, TransformersResponder
from presentation_dependence.records import Candidate, Query
from presentation_dependence.rerankers import RERANKERS
from presentation_dependence.rerankers.api_teacher import (
    ApiRequestError,
    ClosedModelGenBscOptions,
    ClosedModelGenBscReranker,
    parse_grades,
)

pytestmark = pytest.mark.timeout(120)

QUERY = Query("q-api", "what do fleas eat")
KEY_ENV = "PRESDEP_TEST_API_KEY"
KEY = "sk-loopback-secret-0123456789"


def cands(n: int = 5) -> list[Candidate]:
    return [Candidate(f"d{i}", f"passage number {i} " + "x" * (i + 1), i + 1) for i in range(n)]


def true_grade(text: str) -> int:
    return len(text) % 4


def scripted(messages: Sequence[Mapping[str, Any]], body: Mapping[str, Any]) -> str:
    """Grades every passage by its text length, in the ``[i] grade:g`` format."""
    user = str(messages[-1]["content"])
    block = user.split("Passages:\n", 1)[1].split("\n\nGrade each", 1)[0]
    lines = []
    for line in block.splitlines():
        m = re.match(r"\[(\d+)\] (.*)$", line)
        assert m is not None
        lines.append(f"[{m.group(1)}] grade:{true_grade(m.group(2))}")
    return "\n".join(lines)


def make(url: str, tmp: Path, **kw: Any) -> ClosedModelGenBscReranker:
    base: dict[str, Any] = dict(
        model="loopback",
        base_url=url,
        api_key_env=KEY_ENV,
        num_orders=3,
        timeout_s=0.5,
        backoff_base_s=0.01,
        backoff_max_s=0.05,
        max_concurrency=2,
        cache_dir=str(tmp / "cache"),
    )
    base.update(kw)
    return ClosedModelGenBscReranker(ClosedModelGenBscOptions(**base))


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)


def test_registered() -> None:
    assert RERANKERS.get("ClosedModelGenBscReranker") is ClosedModelGenBscReranker


def test_parser_is_strict() -> None:
    text = "[1] grade:3\n[2] grade: 2\nnoise\n[3] grade:7\n[4] grade:1\n[4] grade:2\n[9] grade:1"
    grades, bad = parse_grades(text, 5)
    assert grades == [3, 2, None, None, None]
    assert bad == 4  # noise, grade 7, the second [4], slot 9


def test_faults_nothing_lost_or_double_counted(tmp_path: Path) -> None:
    faults = ["429", "500", "timeout", "malformed"]
    with ChatServer(scripted, faults=faults, timeout_sleep_s=1.0, expected_api_key=KEY) as srv:
        r = make(srv.url, tmp_path)
        res = r.rank(QUERY, cands())
        served = dict(srv.served_prompts)
        counts = dict(srv.counts)
    assert all(counts[f] == 1 for f in faults)
    assert res.details["presentations"] == 3
    assert res.details["retries"] == 4
    assert res.details["http_calls"] == 3 + 4
    assert res.details["missing_grades"] == 0 and res.details["invalid_lines"] == 0
    # every presentation answered exactly once, and each candidate graded once per presentation
    assert counts["ok"] == 3 and sorted(served.values()) == [1, 1, 1]
    for it in res.items:
        assert len(it.details["grades"]) == 3
        assert it.score == true_grade(it.candidate.text)
    # a rerun reads the cache: no HTTP call at all
    with ChatServer(scripted) as srv2:
        again = make(srv2.url, tmp_path).rank(QUERY, cands())
        assert srv2.counts["requests"] == 0
    assert again.details["http_calls"] == 0 and again.details["cache_hits"] == 3
    assert [it.score for it in again.items] == [it.score for it in res.items]
    # the API key never reaches a file
    files = [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]
    assert len(files) == 3
    assert all(KEY not in p.read_text(encoding="utf-8") for p in files)
    assert KEY not in repr(r.describe())


def test_cache_key_holds_the_candidate_order(tmp_path: Path) -> None:
    r = make("http://127.0.0.1:9/v1", tmp_path)
    p1 = r._payload([{"role": "user", "content": "[1] a\n[2] b"}], 2)
    p2 = r._payload([{"role": "user", "content": "[1] b\n[2] a"}], 2)
    assert r.cache_key(p1) != r.cache_key(p2)
    hot = make("http://127.0.0.1:9/v1", tmp_path, temperature=0.7)
    assert hot.cache_key(hot._payload(p1["messages"], 2)) != r.cache_key(p1)


def test_unparseable_answers_are_counted_never_credited(tmp_path: Path) -> None:
    def half(messages: Sequence[Mapping[str, Any]], body: Mapping[str, Any]) -> str:
        return "\n".join(ln for ln in scripted(messages, body).splitlines() if ln[1] in "12")

    with ChatServer(half) as srv:
        res = make(srv.url, tmp_path, use_cache=False).rank(QUERY, cands(4))
    # slots 3 and 4 are never answered; every candidate sits there in some presentations
    assert res.details["missing_grades"] == 3 * 2
    for it in res.items:
        gs = it.details["grades"]
        ok = [g for g in gs if g is not None]
        assert it.details["missing"] == len(gs) - len(ok)
        if ok:
            assert it.score == sum(ok) / len(ok)
        else:
            assert it.score == 0.0 and it.details["all_missing"]


def test_retries_exhausted_raise(tmp_path: Path) -> None:
    with ChatServer(scripted, faults=["500"] * 3) as srv:
        r = make(srv.url, tmp_path, num_orders=1, max_retries=2, use_cache=False)
        with pytest.raises(ApiRequestError, match="3 attempts"):
            r.rank(QUERY, cands(2))
        assert srv.counts["requests"] == 3


def test_refused_request_is_not_retried(tmp_path: Path) -> None:
    with ChatServer(scripted, expected_api_key="another-key-000") as srv:
        r = make(srv.url, tmp_path, num_orders=1, use_cache=False)
        with pytest.raises(ApiRequestError, match="HTTP 401"):
            r.rank(QUERY, cands(2))
        assert srv.counts["requests"] == 1


def test_serves_the_tiny_model(tmp_path: Path, tiny_model: str) -> None:
    import torch

    torch.set_num_threads(1)
    with ChatServer(TransformersResponder(tiny_model, max_new_tokens=24), faults=["500"]) as srv:
        # the random tiny model writes no parseable grade: tolerate it (the test is the serving)
        r = make(srv.url, tmp_path, num_orders=2, timeout_s=60.0, max_missing_fraction=1.0)
        res = r.rank(QUERY, cands(4))
        assert srv.counts["ok"] == 2
    assert res.details["http_calls"] == 3 and res.details["retries"] == 1
    assert all(len(it.details["grades"]) == 2 for it in res.items)
    assert all(0.0 <= it.score <= 3.0 for it in res.items)


def test_backoff_respects_retry_after_and_its_cap(tmp_path: Path) -> None:
    r = make("http://127.0.0.1:9/v1", tmp_path, backoff_base_s=0.01, backoff_max_s=5.0)
    assert r.client._backoff(0, "2") >= 2.0
    assert r.client._backoff(0, "3600") == 5.0  # capped
    assert r.client._backoff(0, "not-a-number") <= 0.01
    a = make("http://127.0.0.1:9/v1", tmp_path).client
    b = make("http://127.0.0.1:9/v1", tmp_path).client
    seq = [a._backoff(k, None) for k in range(3)]
    assert seq == [b._backoff(k, None) for k in range(3)]  # seeded jitter
    assert all(0.5 * 0.01 * 2**k <= d <= 0.01 * 2**k for k, d in enumerate(seq))
