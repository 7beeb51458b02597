"""rank_llm's request/result layout and the older RankGPT layout, read and written.

rank_llm (``rank_llm.data.Request`` / ``Result``, written by its ``DataWriter``)::

    [{"query": {"text": ..., "qid": ...},
      "candidates": [{"docid": ..., "score": ..., "doc": {"text": ..., "title": ...}}, ...]},
     ...]

RankGPT (e.g. ``bm25_top100_dl19.json``)::

    [{"query": "text" | {"text": ..., "qid": ...},
      "hits": [{"content": ..., "qid": ..., "docid": ..., "rank": ..., "score": ...}, ...]},
     ...]

The file is either one JSON array or JSON lines with one such object per line; each object may
use either layout. In the RankGPT layout the query id comes from ``query.qid`` or else from the
hits' ``qid`` (where ``query`` is a plain string); every hit must agree with it. A candidate's
text is the first of ``doc``'s ``text``, ``segment``, ``contents``, ``content``, ``body``,
``passage`` (rank_llm's order), after its ``title`` and one space when there is a title (the
BEIR convention of :mod:`presentation_dependence.io.beir`). Ids may be JSON numbers and are read
as strings. A candidate's first-stage ``rank`` is its 1-based position (or a hit's ``rank``), its
``score`` may be missing or null (read as NaN). Errors name the line where the offending query
or candidate object starts. Written files always carry a numeric ``score`` (rank_llm's reader
refuses null): a candidate without one gets 1 / its rank, as rank_llm scores by position.
"""

from __future__ import annotations

import bisect
import json
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from presentation_dependence.errors import InputFormatError
from presentation_dependence.io._lines import check_id, iter_lines, parse_json_line, read_text
from presentation_dependence.io.atomic import atomic_write_text
from presentation_dependence.records import Candidate, Query, RankResult, RerankRequest

__all__ = [
    "doc_text",
    "rank_score",
    "read_rankllm_docs",
    "read_rankllm_json",
    "request_from_obj",
    "write_rankllm_json",
    "write_rankllm_results",
]

FIX = (
    'write [{"query": {"text", "qid"}, "candidates": [{"docid", "score", "doc": {"text"}}]}] '
    '(rank_llm) or [{"query": "text", "hits": [{"docid", "content", "qid", "rank", "score"}]}]'
)
TEXT_KEYS = ("text", "segment", "contents", "content", "body", "passage")
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


def _list_key(obj: dict[str, Any]) -> str:
    """``"candidates"`` (rank_llm) or ``"hits"`` (RankGPT): the key holding the list."""
    return "candidates" if "candidates" in obj or "hits" not in obj else "hits"


def doc_text(doc: Any) -> str:
    """A rank_llm ``doc`` as one text: the title, one space, the first text field.

    Raises ``ValueError`` when ``doc`` is not a dict with a string text field.
    """
    body = next((doc[k] for k in TEXT_KEYS if k in doc), None) if isinstance(doc, dict) else None
    title = doc.get("title") if isinstance(doc, dict) else None
    if not isinstance(body, str) or (title is not None and not isinstance(title, str)):
        keys = sorted(doc) if isinstance(doc, dict) else type(doc).__name__
        raise ValueError(
            f'a "doc" with a string {" / ".join(TEXT_KEYS)} (and an optional string "title"); '
            f"got {keys}"
        )
    return f"{title or ''} {body}".strip()


def _doc_text(path: Path, line: int, doc: Any) -> str:
    if not isinstance(doc, dict):
        raise InputFormatError(path, line, 'a "doc" object', repr(doc)[:60], FIX)
    try:
        return doc_text(doc)
    except ValueError:
        raise InputFormatError(
            path,
            line,
            f'a "doc" with a string {" / ".join(TEXT_KEYS)} (and an optional string "title")',
            f"keys {sorted(doc)}",
            FIX,
        ) from None


def _candidate(path: Path, line: int, item: Any, pos: int, qid: str, layout: str) -> Candidate:
    if not isinstance(item, dict):
        raise InputFormatError(path, line, "a candidate object", type(item).__name__, FIX)
    docid = _as_id(item.get("docid"))
    if layout == "candidates":
        if docid is None:
            raise InputFormatError(path, line, 'a candidate "docid"', "none", FIX)
        text = _doc_text(path, line, item.get("doc"))
        rank: Any = pos
    else:
        content = item.get("content")
        if docid is None or not isinstance(content, str):
            raise InputFormatError(
                path,
                line,
                'a hit with a "docid" and a string "content"',
                f"docid {item.get('docid')!r}, content {type(content).__name__}",
                FIX,
            )
        text, rank = content, item.get("rank", pos)
        if "qid" in item and _as_id(item["qid"]) != qid:
            raise InputFormatError(
                path,
                line,
                f"the query's qid {qid!r}",
                f"qid {item['qid']!r}",
                "give every hit of a query the same qid",
            )
    score = item.get("score")
    if isinstance(rank, bool) or not isinstance(rank, int) or rank < 1:
        raise InputFormatError(path, line, "an integer rank >= 1", repr(rank), FIX)
    if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float))):
        raise InputFormatError(path, line, "a numeric score or null", repr(score), FIX)
    return Candidate(docid, text, rank, math.nan if score is None else float(score))


def _request(path: Path, line: int, obj: Any, item_lines: Sequence[int]) -> RerankRequest:
    if not isinstance(obj, dict):
        raise InputFormatError(path, line, "a JSON object per query", type(obj).__name__, FIX)
    layout = _list_key(obj)
    q, items = obj.get("query"), obj.get(layout)
    if not isinstance(items, list):
        raise InputFormatError(
            path, line, 'a "candidates" (or RankGPT "hits") list', repr(items)[:60], FIX
        )
    qid = None
    if isinstance(q, dict):
        qid, q = _as_id(q.get("qid")), q.get("text")
    if not isinstance(q, str) or not q.strip():
        raise InputFormatError(path, line, "a non-empty query text", repr(q)[:60], FIX)
    if qid is None and layout == "hits" and items and isinstance(items[0], dict):
        qid = _as_id(items[0].get("qid"))
    if qid is None:
        raise InputFormatError(
            path,
            line,
            "a query id",
            "none",
            'write "query": {"text": ..., "qid": ...} (or, RankGPT, give every hit a "qid")',
        )
    check_id(path, line, qid, "query id")
    cands: list[Candidate] = []
    seen: set[str] = set()
    for pos, item in enumerate(items, start=1):
        il = item_lines[pos - 1] if pos <= len(item_lines) else line
        cand = _candidate(path, il, item, pos, qid, layout)
        check_id(path, il, cand.docid, "docid")
        if cand.docid in seen:
            raise InputFormatError(
                path,
                il,
                "each docid once per query",
                f"docid {cand.docid!r} again in query {qid!r}",
                "remove the duplicate candidate",
            )
        seen.add(cand.docid)
        cands.append(cand)
    return RerankRequest(Query(qid, q.strip()), tuple(cands))


def request_from_obj(obj: Any, path: str | Path, line: int | None = None) -> RerankRequest:
    """One rank_llm / RankGPT request object (already decoded) as a :class:`RerankRequest`.

    Errors name ``path`` and ``line`` (a row number for tabular sources).
    """
    return _request(Path(path), line or 0, obj, [])


def read_rankllm_json(path: str | Path) -> list[RerankRequest]:
    """Read a rank_llm or RankGPT request file (JSON array or JSON lines); see the module doc."""
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
            item_lines: list[int] = []
            if isinstance(obj, dict) and isinstance(obj.get(_list_key(obj)), list):
                items_at, _ = doc.array(doc.members(start)[_list_key(obj)])
                item_lines = [doc.line(p) for p, _ in items_at]
            add(doc.line(start), obj, item_lines)
    elif stripped.startswith("{"):
        for lineno, line_text in iter_lines(path):
            add(lineno, parse_json_line(path, lineno, line_text), [])
    else:
        raise InputFormatError(path, None, "a JSON array or JSON lines", repr(stripped[:20]), FIX)
    if not requests:
        raise InputFormatError(path, None, "at least one query", "an empty list", FIX)
    return requests


def _dump(objects: list[dict[str, Any]], path: str | Path) -> Path:
    """A JSON array (indent 2, as rank_llm writes it), or JSON lines when ``path`` ends .jsonl."""
    if str(path).endswith(".jsonl"):
        text = "".join(json.dumps(o, ensure_ascii=False) + "\n" for o in objects)
    else:
        text = json.dumps(objects, ensure_ascii=False, indent=2) + "\n"
    return atomic_write_text(path, text)


def rank_score(c: Candidate, rank: int) -> float:
    """The score written for ``c`` at 1-based ``rank``: its own score when it has one, else
    ``1 / rank``, the score rank_llm gives a candidate by its position (its
    ``shuffle_and_rescore``). rank_llm's ``Candidate.score`` is a float: null is refused."""
    return 1.0 / rank if math.isnan(c.score) else c.score


def read_rankllm_docs(path: str | Path) -> dict[tuple[str, str], dict[str, Any]]:
    """The ``doc`` object of every rank_llm candidate in ``path``, by ``(qid, docid)``, as the
    file holds it (title and text fields apart), so that a file written back keeps them. Read
    after :func:`read_rankllm_json` has validated the file; RankGPT hits have no ``doc``."""
    text = read_text(Path(path))
    if text.lstrip().startswith("["):
        items = json.loads(text)
    else:
        items = [json.loads(line) for line in text.splitlines() if line.strip()]
    docs: dict[tuple[str, str], dict[str, Any]] = {}
    for obj in items:
        query = obj.get("query") if isinstance(obj, dict) else None
        if not isinstance(query, dict) or not isinstance(obj.get("candidates"), list):
            continue
        for c in obj["candidates"]:
            if isinstance(c, dict) and isinstance(c.get("doc"), dict):
                docs[(str(query.get("qid")), str(c.get("docid")))] = c["doc"]
    return docs


def write_rankllm_json(
    requests: Sequence[RerankRequest],
    path: str | Path,
    *,
    layout: str = "hits",
    docs: Mapping[tuple[str, str], dict[str, Any]] | None = None,
) -> Path:
    """Write ``requests`` as rank_llm requests (``layout="candidates"``) or RankGPT ones, atomically.

    ``query`` is written as ``{"text", "qid"}`` (so a query without candidates keeps its id).
    RankGPT hits carry ``qid``, ``docid``, ``content``, ``rank`` and ``score``; rank_llm
    candidates ``docid``, ``score`` and ``doc: {"text"}`` (or, given ``docs``, the candidate's
    own ``doc`` object as :func:`read_rankllm_docs` read it), in list order (rank_llm's rank). The
    score is always a number (:func:`rank_score`): the candidate's own, else 1 / its rank (the
    hit's ``rank``; a rank_llm candidate's position). A path ending ``.jsonl`` gets JSON lines,
    any other a JSON array.
    """
    if layout not in ("hits", "candidates"):
        raise ValueError(
            f"layout must be 'hits' (RankGPT) or 'candidates' (rank_llm), got {layout!r}"
        )
    out = []
    for r in requests:
        q = {"text": r.query.text, "qid": r.query.qid}
        if layout == "candidates":
            items: list[dict[str, Any]] = [
                {
                    "docid": c.docid,
                    "score": rank_score(c, pos),
                    "doc": (docs or {}).get((r.query.qid, c.docid), {"text": c.text}),
                }
                for pos, c in enumerate(r.candidates, start=1)
            ]
        else:
            items = [
                {
                    "content": c.text,
                    "qid": r.query.qid,
                    "docid": c.docid,
                    "rank": c.rank,
                    "score": rank_score(c, c.rank),
                }
                for c in r.candidates
            ]
        out.append({"query": q, layout: items})
    return _dump(out, path)


def write_rankllm_results(results: Sequence[RankResult], path: str | Path) -> Path:
    """Write reranked lists in rank_llm's ``Result`` form: candidates in rank order, atomically.

    Every candidate carries the reranker's ``score`` and ``doc: {"text"}``, so the file is a
    valid rank_llm request for a next stage (and is read back by :func:`read_rankllm_json`).
    """
    out = [
        {
            "query": {"text": res.query.text, "qid": res.query.qid},
            "candidates": [
                {"docid": it.candidate.docid, "score": it.score, "doc": {"text": it.candidate.text}}
                for it in res.ranked()
            ],
        }
        for res in results
    ]
    return _dump(out, path)
