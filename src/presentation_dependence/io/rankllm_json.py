"""The rank_llm / RankGPT request layout.

::

    [{"query": "text" | {"text": ..., "qid": ...},
      "hits": [{"content": ..., "qid": ..., "docid": ..., "rank": ..., "score": ...}, ...]},
     ...]

The file is either one JSON array (as RankGPT writes it, e.g. ``bm25_top100_dl19.json``) or
JSON lines with one such object per line. The query id comes from ``query.qid`` or else from the
hits' ``qid`` (RankGPT's form, where ``query`` is a plain string); every hit must agree with it.
Ids may be JSON numbers and are read as strings. A hit's ``rank`` defaults to its 1-based
position, its ``score`` may be missing or null (read as NaN). Errors name the line where the
offending query or hit object starts.
"""

from __future__ import annotations

import bisect
import json
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from presentation_dependence.errors import InputFormatError
from presentation_dependence.io._lines import check_id, iter_lines, parse_json_line, read_text
from presentation_dependence.io.atomic import atomic_write_text
from presentation_dependence.records import Candidate, Query, RerankRequest

__all__ = ["read_rankllm_json", "write_rankllm_json"]

FIX = 'write [{"query": "text", "hits": [{"docid", "content", "qid", "rank", "score"}]}]'
_DECODER = json.JSONDecoder()
_WS = " \t\n\r"


class _Located:
    """Decodes a JSON document while remembering where array items and object values start."""

    def __init__(self, path: Path, text: str) -> None:
        self.path, self.text = path, text
        self._newlines = [m.start() for m in re.finditer("\n", text)]

    def line(self, pos: int) -> int:
        return bisect.bisect_left(self._newlines, pos) + 1

    def _skip(self, pos: int) -> int:
        while pos < len(self.text) and self.text[pos] in _WS:
            pos += 1
        return pos

    def _fail(self, pos: int, what: str) -> InputFormatError:
        got = repr(self.text[pos : pos + 20]) if pos < len(self.text) else "the end of the file"
        return InputFormatError(self.path, self.line(pos), what, got, "fix the JSON syntax")

    def value(self, pos: int) -> tuple[Any, int]:
        try:
            return _DECODER.raw_decode(self.text, pos)
        except json.JSONDecodeError as exc:
            raise InputFormatError(
                self.path,
                exc.lineno,
                "valid JSON",
                f"{exc.msg} at column {exc.colno}",
                "fix the JSON syntax",
            ) from None

    def array(self, pos: int) -> tuple[list[tuple[int, Any]], int]:
        """``([(start, item), ...], end)`` of the array starting at ``pos``."""
        pos = self._skip(pos)
        if self.text[pos : pos + 1] != "[":
            raise self._fail(pos, "a JSON array")
        items: list[tuple[int, Any]] = []
        pos = self._skip(pos + 1)
        if self.text[pos : pos + 1] == "]":
            return items, pos + 1
        while True:
            start = self._skip(pos)
            item, pos = self.value(start)
            items.append((start, item))
            pos = self._skip(pos)
            if self.text[pos : pos + 1] == "]":
                return items, pos + 1
            if self.text[pos : pos + 1] != ",":
                raise self._fail(pos, "',' or ']'")
            pos += 1

    def members(self, pos: int) -> dict[str, int]:
        """``{key: start of its value}`` of the object starting at ``pos``."""
        pos = self._skip(pos)
        starts: dict[str, int] = {}
        pos = self._skip(pos + 1)  # past "{"
        while self.text[pos : pos + 1] != "}":
            key, pos = self.value(pos)
            pos = self._skip(self._skip(pos) + 1)  # past ":"
            starts[key] = pos
            _, pos = self.value(pos)
            pos = self._skip(pos)
            if self.text[pos : pos + 1] == ",":
                pos = self._skip(pos + 1)
        return starts


def _as_id(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return None
    return str(value).strip() or None


def _request(path: Path, line: int, obj: Any, hit_lines: Sequence[int]) -> RerankRequest:
    if not isinstance(obj, dict):
        raise InputFormatError(path, line, "a JSON object per query", type(obj).__name__, FIX)
    q, hits = obj.get("query"), obj.get("hits")
    if not isinstance(hits, list):
        raise InputFormatError(path, line, 'a "hits" list', repr(hits)[:60], FIX)
    qid = None
    if isinstance(q, dict):
        qid, q = _as_id(q.get("qid")), q.get("text")
    if not isinstance(q, str) or not q.strip():
        raise InputFormatError(path, line, "a non-empty query text", repr(q)[:60], FIX)
    if qid is None and hits and isinstance(hits[0], dict):
        qid = _as_id(hits[0].get("qid"))
    if qid is None:
        raise InputFormatError(
            path,
            line,
            "a query id",
            "none",
            'write "query": {"text": ..., "qid": ...} or give every hit a "qid"',
        )
    check_id(path, line, qid, "query id")
    cands: list[Candidate] = []
    seen: set[str] = set()
    for pos, hit in enumerate(hits, start=1):
        hl = hit_lines[pos - 1] if pos <= len(hit_lines) else line
        if not isinstance(hit, dict):
            raise InputFormatError(path, hl, "a hit object", type(hit).__name__, FIX)
        docid = _as_id(hit.get("docid"))
        content = hit.get("content")
        if docid is None or not isinstance(content, str):
            raise InputFormatError(
                path,
                hl,
                'a hit with a "docid" and a string "content"',
                f"docid {hit.get('docid')!r}, content {type(content).__name__}",
                FIX,
            )
        check_id(path, hl, docid, "docid")
        if docid in seen:
            raise InputFormatError(
                path,
                hl,
                "each docid once per query",
                f"docid {docid!r} again in query {qid!r}",
                "remove the duplicate hit",
            )
        seen.add(docid)
        if "qid" in hit and _as_id(hit["qid"]) != qid:
            raise InputFormatError(
                path,
                hl,
                f"the query's qid {qid!r}",
                f"qid {hit['qid']!r}",
                "give every hit of a query the same qid",
            )
        rank, score = hit.get("rank", pos), hit.get("score")
        if isinstance(rank, bool) or not isinstance(rank, int) or rank < 1:
            raise InputFormatError(path, hl, "an integer rank >= 1", repr(rank), FIX)
        if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float))):
            raise InputFormatError(path, hl, "a numeric score or null", repr(score), FIX)
        cands.append(Candidate(docid, content, rank, math.nan if score is None else float(score)))
    return RerankRequest(Query(qid, q.strip()), tuple(cands))


def read_rankllm_json(path: str | Path) -> list[RerankRequest]:
    """Read a rank_llm/RankGPT request file (JSON array or JSON lines); see the module doc."""
    path = Path(path)
    text = read_text(path)
    stripped = text.lstrip()
    requests: list[RerankRequest] = []
    seen: dict[str, int] = {}

    def add(line: int, obj: Any, hit_lines: Sequence[int]) -> None:
        req = _request(path, line, obj, hit_lines)
        if req.query.qid in seen:
            raise InputFormatError(
                path,
                line,
                "each query once",
                f"query {req.query.qid!r} again (first on line {seen[req.query.qid]})",
                "merge or drop the duplicate entry",
            )
        seen[req.query.qid] = line
        requests.append(req)

    if stripped.startswith("["):
        doc = _Located(path, text)
        items, end = doc.array(0)
        if text[end:].strip():
            raise InputFormatError(
                path,
                doc.line(end),
                "nothing after the closing ']'",
                repr(text[end:].strip()[:20]),
                "remove the trailing text",
            )
        for start, obj in items:
            hit_lines: list[int] = []
            if isinstance(obj, dict) and isinstance(obj.get("hits"), list):
                hits, _ = doc.array(doc.members(start)["hits"])
                hit_lines = [doc.line(p) for p, _ in hits]
            add(doc.line(start), obj, hit_lines)
    elif stripped.startswith("{"):
        for lineno, line_text in iter_lines(path):
            add(lineno, parse_json_line(path, lineno, line_text), [])
    else:
        raise InputFormatError(path, None, "a JSON array or JSON lines", repr(stripped[:20]), FIX)
    if not requests:
        raise InputFormatError(path, None, "at least one query", "an empty list", FIX)
    return requests


def write_rankllm_json(requests: Sequence[RerankRequest], path: str | Path) -> Path:
    """Write ``requests`` as a RankGPT JSON array, atomically.

    ``query`` is written as ``{"text", "qid"}`` (so a query without hits keeps its id) and every
    hit carries ``qid``, ``docid``, ``content``, ``rank`` and ``score`` (null when unknown).
    """
    out = [
        {
            "query": {"text": r.query.text, "qid": r.query.qid},
            "hits": [
                {
                    "content": c.text,
                    "qid": r.query.qid,
                    "docid": c.docid,
                    "rank": c.rank,
                    "score": None if math.isnan(c.score) else c.score,
                }
                for c in r.candidates
            ],
        }
        for r in requests
    ]
    return atomic_write_text(path, json.dumps(out, ensure_ascii=False, indent=1) + "\n")
