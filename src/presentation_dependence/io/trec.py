"""TREC runs, qrels and topics.

Run order
---------
trec_eval (and pytrec_eval) ignores the rank column: it orders a query's documents by score,
descending, and breaks ties by document id, *descending* (``strcmp``). :func:`read_run` orders
every query's entries the same way and renumbers ``RunEntry.rank`` 1, 2, ... in that order, so
a run read here means what it means to trec_eval. The rank column must still be an integer; when
it disagrees with the score order a warning says so.

:func:`write_run` writes *tie-safe* scores by default so that trec_eval cannot reorder tied
scores by docid (see its docstring).
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Container, Iterable
from pathlib import Path

from presentation_dependence.errors import InputFormatError
from presentation_dependence.io._lines import check_id, iter_lines, parse_float, parse_int
from presentation_dependence.io.atomic import atomic_write_text
from presentation_dependence.records import Qrels, Run, RunEntry, Topics

__all__ = [
    "format_qrels",
    "format_run",
    "read_qrels",
    "read_run",
    "read_topics",
    "write_qrels",
    "write_run",
    "write_topics",
]

logger = logging.getLogger(__name__)

RUN_FIX = "write 6 whitespace-separated columns 'qid Q0 docid rank score tag'"
QRELS_FIX = "write 4 whitespace-separated columns 'qid iter docid grade' (grade an integer)"
TOPICS_FIX = "write one topic per line as 'qid<TAB>query text'"
TIE_EPS = 1e-5


def _empty(path: Path, what: str, fix: str) -> InputFormatError:
    return InputFormatError(path, None, what, "an empty file", fix)


def _is_int(text: str) -> bool:
    try:
        int(text)
    except ValueError:
        return False
    return True


def _is_number(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def _swapped_fix(cols: list[str], fix: str) -> str:
    """``fix``, led by "swapped?" when a run line looks like qrels or a qrels line like a run.

    A qrels line is ``qid iter docid grade`` (grade an integer); a run line ``qid Q0 docid rank
    score tag`` (rank an integer, score a number).
    """
    if len(cols) == 4 and _is_int(cols[3]):
        return (
            "this line looks like TREC qrels ('qid iter docid grade'), not a run: were the run "
            f"and the qrels swapped? Give the run file first (e.g. presdep eval RUN QRELS); else {fix}"
        )
    if len(cols) == 6 and _is_int(cols[3]) and _is_number(cols[4]):
        return (
            "this line looks like a TREC run ('qid Q0 docid rank score tag'), not qrels: were the "
            f"run and the qrels swapped? Give the qrels file second (e.g. presdep eval RUN QRELS); "
            f"else {fix}"
        )
    return fix


def read_run(
    path: str | Path,
    *,
    corpus_ids: Container[str] | None = None,
    query_ids: Container[str] | None = None,
) -> Run:
    """Read a TREC run ``qid Q0 docid rank score tag`` (blank lines are skipped).

    Entries are kept in trec_eval's order, score descending then docid descending, and
    ``RunEntry.rank`` is the 1-based position in that order (see the module docstring). Queries
    keep the order of their first line. ``Run.name`` is the tag of the first line.

    ``corpus_ids``/``query_ids``, when given, make a docid missing from the corpus or a qid
    missing from the topics an error on the line where it occurs.
    """
    path = Path(path)
    rows: dict[str, list[tuple[float, str, int, str]]] = {}
    seen: dict[tuple[str, str], int] = {}
    for lineno, line in iter_lines(path):
        qid, docid, rank, score, tag = _run_line(path, lineno, line)
        if (qid, docid) in seen:
            raise InputFormatError(
                path,
                lineno,
                "each docid once per query",
                f"docid {docid!r} again for query {qid!r} (first on line {seen[qid, docid]})",
                "remove the duplicate line",
            )
        seen[qid, docid] = lineno
        if query_ids is not None and qid not in rows and qid not in query_ids:
            raise InputFormatError(
                path,
                lineno,
                "a query id that is in the topics",
                f"query {qid!r}",
                "add the query to the topics file or remove its lines from the run",
            )
        if corpus_ids is not None and docid not in corpus_ids:
            raise InputFormatError(
                path,
                lineno,
                "a docid that is in the corpus",
                f"docid {docid!r}",
                "point data.corpus at the corpus this run was retrieved from, or drop the line",
            )
        rows.setdefault(qid, []).append((score, docid, rank, tag))
    if not rows:
        raise _empty(path, "at least one run line", RUN_FIX)
    first_tag = next(iter(rows.values()))[0][3]
    return Run(entries=_trec_eval_order(path, rows), name=first_tag)


def _run_line(path: Path, lineno: int, line: str) -> tuple[str, str, int, float, str]:
    """``(qid, docid, rank, score, tag)`` of one run line, its columns checked."""
    cols = line.split()
    if len(cols) != 6:
        raise InputFormatError(
            path,
            lineno,
            "6 columns",
            f"{len(cols)}: {line.strip()!r}",
            _swapped_fix(cols, RUN_FIX),
        )
    qid, _q0, docid, rank_s, score_s, tag = cols
    rank = parse_int(path, lineno, rank_s, "rank (column 4)", RUN_FIX)
    score = parse_float(path, lineno, score_s, "score (column 5)", RUN_FIX)
    return qid, docid, rank, score, tag


def _trec_eval_order(
    path: Path, rows: dict[str, list[tuple[float, str, int, str]]]
) -> dict[str, tuple[RunEntry, ...]]:
    """Each query's ``(score, docid, rank, tag)`` rows as entries in trec_eval's order, ranked
    1, 2, ... in it; a warning when the rank column disagrees."""
    entries: dict[str, tuple[RunEntry, ...]] = {}
    disagree = 0
    for qid, qrows in rows.items():
        # trec_eval order: score descending, then docid descending. Python's str order equals
        # strcmp on UTF-8 bytes (code point order), as trec_eval compares.
        ordered = sorted(qrows, key=lambda r: (r[0], r[1]), reverse=True)
        if [r[2] for r in ordered] != sorted(r[2] for r in qrows):
            disagree += 1
        entries[qid] = tuple(
            RunEntry(qid, docid, i, score, tag)
            for i, (score, docid, _, tag) in enumerate(ordered, start=1)
        )
    if disagree:
        logger.warning(
            "%s: in %d of %d queries the rank column disagrees with trec_eval's order "
            "(score desc, docid desc); using trec_eval's order",
            path,
            disagree,
            len(entries),
        )
    return entries


def _tie_safe(scores: list[float]) -> list[str]:
    """Format ``scores`` (rank order) as strictly decreasing ``%.6f`` strings."""
    out: list[str] = []
    prev: float | None = None
    for s in scores:
        w = s if prev is None else min(s, prev - TIE_EPS)
        text = f"{w:.6f}"
        if prev is not None and not float(text) < prev:
            raise ValueError(
                f"cannot write tie-safe scores near {s!r}: %.6f has no room below {prev!r}; "
                "rescale the scores or pass tie_safe=False"
            )
        prev = float(text)
        out.append(text)
    return out


def _check_token(value: str, what: str) -> None:
    if not value or any(ch.isspace() for ch in value):
        raise ValueError(f"a TREC {what} must be non-empty without whitespace, got {value!r}")


def write_run(run: Run, path: str | Path, *, tie_safe: bool = True) -> Path:
    """Write :func:`format_run` of ``run`` to ``path``, atomically."""
    return atomic_write_text(path, format_run(run, tie_safe=tie_safe))


def format_run(run: Run, *, tie_safe: bool = True) -> str:
    """``run`` as ``qid Q0 docid rank score tag`` lines, score ``%.6f``.

    Each query's entries are written in ``RunEntry.rank`` order. trec_eval ignores the rank
    column and sorts by score, breaking ties by docid (descending), so tied scores could be
    evaluated in another order than the one ranked. With ``tie_safe`` (the default) the written
    scores are made strictly decreasing in rank order::

        w_1 = s_1,   w_i = min(s_i, w_{i-1} - 1e-5)

    (applied to the rounded values actually written), so trec_eval sees exactly the rank order.
    The written scores are then an order-preserving stand-in; the exact scores live in the
    run folder's result records, not in the TREC file. ``tie_safe=False`` writes the scores as
    they are.
    """
    lines: list[str] = []
    for qid, rows in run.entries.items():
        _check_token(qid, "query id")
        ordered = sorted(rows, key=lambda e: e.rank)
        for e in ordered:
            _check_token(e.docid, "docid")
            _check_token(e.tag, "run tag")
            if not math.isfinite(e.score):
                raise ValueError(f"non-finite score {e.score!r} for {qid}/{e.docid}")
        scores = (
            _tie_safe([e.score for e in ordered])
            if tie_safe
            else [f"{e.score:.6f}" for e in ordered]
        )
        lines.extend(
            f"{qid} Q0 {e.docid} {e.rank} {s} {e.tag}\n"
            for e, s in zip(ordered, scores, strict=True)
        )
    return "".join(lines)


def read_qrels(path: str | Path) -> Qrels:
    """Read TREC qrels ``qid iter docid grade``; grades are integers, negative ones allowed."""
    path = Path(path)
    judgements: dict[str, dict[str, int]] = {}
    for lineno, line in iter_lines(path):
        cols = line.split()
        if len(cols) != 4:
            raise InputFormatError(
                path,
                lineno,
                "4 columns",
                f"{len(cols)}: {line.strip()!r}",
                _swapped_fix(cols, QRELS_FIX),
            )
        qid, _iter, docid, grade_s = cols
        grade = parse_int(path, lineno, grade_s, "grade (column 4)", QRELS_FIX)
        docs = judgements.setdefault(qid, {})
        if docid in docs:
            raise InputFormatError(
                path,
                lineno,
                "each docid judged once per query",
                f"docid {docid!r} again for query {qid!r}",
                "remove the duplicate judgement",
            )
        docs[docid] = grade
    if not judgements:
        raise _empty(path, "at least one judgement", QRELS_FIX)
    return Qrels(judgements)


def write_qrels(qrels: Qrels, path: str | Path) -> Path:
    """Write ``qrels`` as ``qid 0 docid grade`` lines, atomically."""
    return atomic_write_text(path, format_qrels(qrels))


def format_qrels(qrels: Qrels) -> str:
    """``qrels`` as ``qid 0 docid grade`` lines."""
    lines: list[str] = []
    for qid, docs in qrels.judgements.items():
        _check_token(qid, "query id")
        for docid, grade in docs.items():
            _check_token(docid, "docid")
            lines.append(f"{qid} 0 {docid} {int(grade)}\n")
    return "".join(lines)


def read_topics(path: str | Path) -> Topics:
    """Read topics ``qid<TAB>text``: one per line, text non-empty, each qid once."""
    path = Path(path)
    queries: dict[str, str] = {}
    for lineno, line in iter_lines(path):
        qid, tab, text = line.partition("\t")
        qid, text = qid.strip(), text.strip()
        if not tab:
            raise InputFormatError(
                path, lineno, "'qid<TAB>text'", f"no tab in {line[:60]!r}", TOPICS_FIX
            )
        if not qid or not text:
            raise InputFormatError(
                path,
                lineno,
                "a non-empty query id and query text",
                f"qid {qid!r}, text {text!r}",
                TOPICS_FIX,
            )
        check_id(path, lineno, qid, "query id (before the tab)")
        if qid in queries:
            raise InputFormatError(
                path, lineno, "each query id once", f"query {qid!r} again", "remove the duplicate"
            )
        queries[qid] = text
    if not queries:
        raise _empty(path, "at least one topic", TOPICS_FIX)
    return Topics(queries)


def write_topics(topics: Topics | Iterable[tuple[str, str]], path: str | Path) -> Path:
    """Write ``qid<TAB>text`` lines, atomically (tabs and newlines in a text become spaces)."""
    items = topics.queries.items() if isinstance(topics, Topics) else topics
    lines: list[str] = []
    for qid, text in items:
        _check_token(qid, "query id")
        clean = re.sub(r"[\t\r\n]+", " ", text).strip()
        if not clean:
            raise ValueError(f"query {qid!r} has an empty text")
        lines.append(f"{qid}\t{clean}\n")
    return atomic_write_text(path, "".join(lines))
