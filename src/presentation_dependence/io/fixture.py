"""The self-contained fixture: queries, candidate texts and (optionally) judgements in one file.

JSON lines, one query per line::

    {"qid": "q1", "query": "text",
     "candidates": [{"docid": "d1", "text": "...", "rank": 1, "score": 12.5}, ...],
     "qrels": {"d1": 2, "d7": 0}}

``rank`` (an integer >= 1) defaults to the 1-based list position and ``score`` (a number or
null) to NaN; ``qrels`` (integer grades) is optional per line. Ids may be JSON strings or
integers and are read as strings. Unknown keys are errors, so a typo cannot pass silently.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from presentation_dependence.errors import InputFormatError
from presentation_dependence.io._lines import check_id, check_keys, iter_lines, parse_json_line
from presentation_dependence.io.atomic import atomic_write_text
from presentation_dependence.records import Candidate, Qrels, Query, RerankRequest

__all__ = ["read_fixture", "write_fixture"]

FIX = (
    'write one {"qid": ..., "query": ..., "candidates": [{"docid": ..., "text": ...}], '
    '"qrels": {docid: grade}} object per line'
)
_LINE_KEYS = ("qid", "query", "candidates", "qrels")
_CAND_KEYS = ("docid", "text", "rank", "score")


def _id(path: Path, lineno: int, value: Any, what: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)) or not str(value).strip():
        raise InputFormatError(path, lineno, f"a non-empty {what}", repr(value), FIX)
    return check_id(path, lineno, str(value).strip(), what)


def _candidate(path: Path, lineno: int, pos: int, c: Any) -> Candidate:
    if not isinstance(c, dict):
        raise InputFormatError(path, lineno, f"candidate {pos} as an object", repr(c)[:40], FIX)
    check_keys(path, lineno, c, _CAND_KEYS, FIX)
    docid = _id(path, lineno, c.get("docid"), f"docid (candidate {pos})")
    text, rank, score = c.get("text"), c.get("rank", pos), c.get("score")
    if not isinstance(text, str):
        raise InputFormatError(path, lineno, f'a string "text" for {docid!r}', repr(text), FIX)
    if isinstance(rank, bool) or not isinstance(rank, int) or rank < 1:
        raise InputFormatError(path, lineno, f"an integer rank >= 1 for {docid!r}", repr(rank), FIX)
    if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float))):
        raise InputFormatError(path, lineno, f"a numeric score for {docid!r}", repr(score), FIX)
    return Candidate(docid, text, rank, math.nan if score is None else float(score))


def read_fixture(path: str | Path) -> tuple[list[RerankRequest], Qrels]:
    """Read a fixture JSONL file: the requests in file order and the judgements it holds.

    Only lines with a ``qrels`` key contribute judgements; a fixture without any gives an
    empty :class:`Qrels`.
    """
    path = Path(path)
    requests: list[RerankRequest] = []
    judgements: dict[str, dict[str, int]] = {}
    seen: dict[str, int] = {}
    for lineno, line in iter_lines(path):
        obj = parse_json_line(path, lineno, line)
        check_keys(path, lineno, obj, _LINE_KEYS, FIX)
        qid = _id(path, lineno, obj.get("qid"), "qid")
        if qid in seen:
            raise InputFormatError(
                path,
                lineno,
                "each qid once",
                f"qid {qid!r} again (first on line {seen[qid]})",
                "merge or drop the duplicate line",
            )
        seen[qid] = lineno
        text = obj.get("query")
        if not isinstance(text, str) or not text.strip():
            raise InputFormatError(path, lineno, "a non-empty query text", repr(text), FIX)
        raw = obj.get("candidates")
        if not isinstance(raw, list):
            raise InputFormatError(path, lineno, 'a "candidates" list', repr(raw)[:40], FIX)
        cands = [_candidate(path, lineno, pos, c) for pos, c in enumerate(raw, start=1)]
        docids: set[str] = set()
        for c in cands:
            if c.docid in docids:
                raise InputFormatError(
                    path,
                    lineno,
                    "each docid once per query",
                    f"docid {c.docid!r} twice in query {qid!r}",
                    "remove the duplicate candidate",
                )
            docids.add(c.docid)
        requests.append(RerankRequest(Query(qid, text.strip()), tuple(cands)))
        if "qrels" in obj:
            judgements[qid] = _qrels(path, lineno, obj["qrels"])
    if not requests:
        raise InputFormatError(path, None, "at least one query line", "an empty file", FIX)
    return requests, Qrels(judgements)


def _qrels(path: Path, lineno: int, raw: Any) -> dict[str, int]:
    if not isinstance(raw, dict):
        raise InputFormatError(path, lineno, '"qrels" as {docid: grade}', repr(raw)[:40], FIX)
    out: dict[str, int] = {}
    for docid, grade in raw.items():
        if isinstance(grade, bool) or not isinstance(grade, int):
            raise InputFormatError(
                path, lineno, f"an integer grade for {docid!r}", repr(grade), FIX
            )
        out[_id(path, lineno, docid, "qrels docid")] = grade
    return out


def write_fixture(
    path: str | Path, requests: Sequence[RerankRequest], qrels: Qrels | None = None
) -> Path:
    """Write ``requests`` (and each query's judgements from ``qrels``) as fixture JSONL.

    A query gets a ``qrels`` key when ``qrels`` judges it; candidates always carry ``rank``,
    and ``score`` unless it is NaN.
    """
    lines: list[str] = []
    for r in requests:
        obj: dict[str, Any] = {
            "qid": r.query.qid,
            "query": r.query.text,
            "candidates": [
                {"docid": c.docid, "text": c.text, "rank": c.rank}
                | ({} if math.isnan(c.score) else {"score": c.score})
                for c in r.candidates
            ],
        }
        if qrels is not None and r.query.qid in qrels.judgements:
            obj["qrels"] = {d: int(g) for d, g in qrels.judgements[r.query.qid].items()}
        lines.append(json.dumps(obj, ensure_ascii=False) + "\n")
    return atomic_write_text(path, "".join(lines))
