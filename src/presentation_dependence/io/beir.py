"""BEIR folders: ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/<split>.tsv``.

Document text
-------------
A BEIR document ``{"_id", "title", "text"}`` becomes ``f"{title} {text}".strip()``: the title,
one space, the body (just the body when the title is empty, as in Vaswani/NPL). This is the
plain concatenation BEIR's own lexical baselines index.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from presentation_dependence.errors import InputFormatError
from presentation_dependence.io._lines import check_id, iter_lines, parse_int, parse_json_line
from presentation_dependence.records import Qrels, Topics

__all__ = [
    "beir_splits",
    "read_beir_corpus",
    "read_beir_corpus_jsonl",
    "read_beir_qrels",
    "read_beir_queries",
]

logger = logging.getLogger(__name__)

QRELS_FIX = "write 3 tab-separated columns 'query-id<TAB>corpus-id<TAB>score' (score an integer)"


def _id(path: Path, lineno: int, obj: dict[str, Any], fix: str) -> str:
    raw = obj.get("_id")
    if isinstance(raw, bool) or not isinstance(raw, (str, int)) or not str(raw).strip():
        raise InputFormatError(path, lineno, 'a non-empty "_id" (string)', repr(raw), fix)
    return check_id(path, lineno, str(raw).strip(), '"_id"')


def _str_field(path: Path, lineno: int, obj: dict[str, Any], key: str, fix: str) -> str:
    value = obj.get(key, "")
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InputFormatError(
            path, lineno, f'"{key}" as a string', f"a JSON {type(value).__name__}", fix
        )
    return value


def read_beir_corpus_jsonl(path: str | Path) -> dict[str, str]:
    """Read a BEIR ``corpus.jsonl`` file: ``{docid: f"{title} {text}".strip()}``."""
    path = Path(path)
    fix = 'write one {"_id": ..., "title": ..., "text": ...} object per line'
    docs: dict[str, str] = {}
    empty = 0
    for lineno, line in iter_lines(path):
        obj = parse_json_line(path, lineno, line)
        docid = _id(path, lineno, obj, fix)
        if docid in docs:
            raise InputFormatError(
                path, lineno, "each _id once", f"_id {docid!r} again", "remove the duplicate"
            )
        title = _str_field(path, lineno, obj, "title", fix)
        text = _str_field(path, lineno, obj, "text", fix)
        docs[docid] = f"{title} {text}".strip()
        empty += not docs[docid]
    if not docs:
        raise InputFormatError(path, None, "at least one document", "an empty file", fix)
    if empty:
        logger.warning("%s: %d of %d documents have no text", path, empty, len(docs))
    return docs


def _folder(folder: str | Path) -> Path:
    folder = Path(folder)
    if not folder.is_dir():
        raise InputFormatError(
            folder,
            None,
            "a BEIR folder (corpus.jsonl, queries.jsonl, qrels/)",
            "no such folder" if not folder.exists() else "a file",
            "point data.path at the dataset's folder",
        )
    return folder


def read_beir_corpus(folder: str | Path) -> dict[str, str]:
    """Read ``<folder>/corpus.jsonl`` (see the module docstring for the text)."""
    return read_beir_corpus_jsonl(_folder(folder) / "corpus.jsonl")


def read_beir_queries(folder: str | Path) -> Topics:
    """Read ``<folder>/queries.jsonl`` (``{"_id", "text"}`` per line; text non-empty)."""
    path = _folder(folder) / "queries.jsonl"
    fix = 'write one {"_id": ..., "text": "the query"} object per line'
    queries: dict[str, str] = {}
    for lineno, line in iter_lines(path):
        obj = parse_json_line(path, lineno, line)
        qid = _id(path, lineno, obj, fix)
        text = _str_field(path, lineno, obj, "text", fix).strip()
        if not text:
            raise InputFormatError(path, lineno, "a non-empty query text", repr(text), fix)
        if qid in queries:
            raise InputFormatError(
                path, lineno, "each _id once", f"_id {qid!r} again", "remove the duplicate"
            )
        queries[qid] = text
    if not queries:
        raise InputFormatError(path, None, "at least one query", "an empty file", fix)
    return Topics(queries)


def beir_splits(folder: str | Path) -> list[str]:
    """The splits ``<folder>/qrels/*.tsv`` provides, sorted."""
    qrels_dir = Path(folder) / "qrels"
    return sorted(p.stem for p in qrels_dir.glob("*.tsv")) if qrels_dir.is_dir() else []


def read_beir_qrels(folder: str | Path, split: str = "test") -> Qrels:
    """Read ``<folder>/qrels/<split>.tsv`` (header ``query-id corpus-id score``, then rows).

    An unknown split is an error that lists the splits the folder has.
    """
    folder = _folder(folder)
    path = folder / "qrels" / f"{split}.tsv"
    if not path.is_file():
        splits = beir_splits(folder)
        raise InputFormatError(
            path,
            None,
            f"a split that exists ({', '.join(splits) or 'none in qrels/'})",
            f"split {split!r}",
            f"set data.split to one of: {', '.join(splits)}"
            if splits
            else f"add qrels/<split>.tsv files to {folder}",
        )
    judgements: dict[str, dict[str, int]] = {}
    first = True
    for lineno, line in iter_lines(path):
        cols = [c.strip() for c in (line.split("\t") if "\t" in line else line.split())]
        if first and cols[0].lower() in ("query-id", "query_id", "qid"):
            first = False
            continue  # the header
        first = False
        if len(cols) != 3:
            raise InputFormatError(path, lineno, "3 columns", f"{len(cols)}: {line!r}", QRELS_FIX)
        qid, docid, grade_s = cols
        check_id(path, lineno, qid, "query-id (column 1)")
        check_id(path, lineno, docid, "corpus-id (column 2)")
        grade = parse_int(path, lineno, grade_s, "score (column 3)", QRELS_FIX)
        docs = judgements.setdefault(qid, {})
        if docid in docs:
            raise InputFormatError(
                path,
                lineno,
                "each corpus-id judged once per query",
                f"{docid!r} again for query {qid!r}",
                "remove the duplicate judgement",
            )
        docs[docid] = grade
    if not judgements:
        raise InputFormatError(path, None, "at least one judgement", "no rows", QRELS_FIX)
    return Qrels(judgements)
