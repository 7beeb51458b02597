"""Issue 16 (8): the hosted-teacher client shows refusals, bounds a request's wall clock, and
never caches or credits a teacher whose answers do not parse. Loopback server, no network."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from presdep_tools.testing.chat_server import ChatServer
from presentation_dependence.rerankers.api_teacher import ApiRequestError

from .test_api_teacher import KEY, KEY_ENV, QUERY, cands, make, scripted

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)


def test_a_refusal_shows_the_servers_reason(tmp_path: Path) -> None:
    body = b'{"error": {"message": "max_tokens is too large: 99999 > 4096"}}'
    with ChatServer(scripted, faults=["400"], error_body=body) as srv:
        r = make(srv.url, tmp_path, num_orders=1, use_cache=False)
        with pytest.raises(ApiRequestError, match="max_tokens is too large") as e:
            r.rank(QUERY, cands(2))
        assert srv.counts["requests"] == 1  # a 4xx is not retried
    assert "HTTP 400" in str(e.value)


def test_a_refusal_body_is_truncated_and_redacted(tmp_path: Path) -> None:
    body = ('{"error": {"message": "bad key ' + KEY + " " + "y" * 5000 + '"}}').encode()
    with ChatServer(scripted, faults=["400"], error_body=body) as srv:
        r = make(srv.url, tmp_path, num_orders=1, use_cache=False)
        with pytest.raises(ApiRequestError) as e:
            r.rank(QUERY, cands(2))
    msg = str(e.value)
    assert KEY not in msg and "<redacted:PRESDEP_TEST_API_KEY>" in msg
    assert "yyyy" in msg and len(msg) < 1000


def test_a_trickling_server_meets_the_wall_clock_deadline(tmp_path: Path) -> None:
    """Each byte comes within the socket timeout, the whole answer never within timeout_s."""
    with ChatServer(scripted, faults=["trickle"], trickle_interval_s=0.2) as srv:
        r = make(srv.url, tmp_path, num_orders=1, use_cache=False, timeout_s=0.5, max_retries=0)
        with pytest.raises(ApiRequestError, match="deadline"):
            r.rank(QUERY, cands(2))
        srv.wait_idle()
        assert srv.counts["client_gone"] == 1  # the client hung up mid-answer


def _never_parses(messages: Sequence[Mapping[str, Any]], body: Mapping[str, Any]) -> str:
    return "I am sorry, I cannot grade these passages."


def test_no_parseable_grade_fails_the_query_and_is_not_cached(tmp_path: Path) -> None:
    with ChatServer(_never_parses) as srv:
        r = make(srv.url, tmp_path, num_orders=2)
        with pytest.raises(ApiRequestError, match="did not parse") as e:
            r.rank(QUERY, cands(3))
    assert "cannot grade" in str(e.value)  # the answer is shown
    assert not list((tmp_path / "cache").rglob("*.json"))
    with ChatServer(scripted) as srv:  # a rerun asks again and gets real grades
        res = make(srv.url, tmp_path, num_orders=2).rank(QUERY, cands(3))
        assert srv.counts["ok"] == 2
    assert res.details["missing_grades"] == 0


def test_the_tolerance_is_configurable(tmp_path: Path) -> None:
    with ChatServer(_never_parses) as srv:
        r = make(srv.url, tmp_path, num_orders=2, max_missing_fraction=1.0)
        res = r.rank(QUERY, cands(3))
    assert res.details["all_missing_candidates"] == 3
    assert not list((tmp_path / "cache").rglob("*.json"))  # still never cached
    with pytest.raises(Exception, match="max_missing_fraction"):
        make("http://127.0.0.1:9/v1", tmp_path, max_missing_fraction=1.5)
