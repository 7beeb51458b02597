"""Corpora: a BEIR ``corpus.jsonl`` or a ``docid<TAB>text`` TSV.

TSV quoting
-----------
Some TSV corpora are written by CSV writers, which wrap a text that contains tabs or quotes in
double quotes and double the quotes inside (NovelEval's ``corpus.tsv`` does, for 80 of its 420
passages). A text that is *entirely* such a quoted field (starts and ends with ``"``, and every
inner ``"`` is doubled) is unquoted; any other text is kept exactly as written, tabs included.
A quoted field cannot span lines here: each document is one line.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

from presentation_dependence.errors import InputFormatError
from presentation_dependence.io._lines import check_id, iter_lines, read_text
from presentation_dependence.io.beir import read_beir_corpus_jsonl

__all__ = ["read_corpus", "read_corpus_tsv"]

logger = logging.getLogger(__name__)

TSV_FIX = "write one document per line as 'docid<TAB>text'"
_CSV_QUOTED = re.compile(r'"((?:[^"]|"")*)"')


def _unquote(text: str) -> str:
    m = _CSV_QUOTED.fullmatch(text)
    return m.group(1).replace('""', '"') if m else text


def read_corpus_tsv(path: str | Path) -> dict[str, str]:
    """Read a ``docid<TAB>text`` corpus (split at the first tab; see the module docstring)."""
    path = Path(path)
    docs: dict[str, str] = {}
    empty = 0
    for lineno, line in iter_lines(path):
        docid, tab, text = line.partition("\t")
        docid = docid.strip()
        if not tab or not docid:
            raise InputFormatError(
                path,
                lineno,
                "'docid<TAB>text'",
                "no tab" if not tab else "an empty docid",
                TSV_FIX,
            )
        check_id(path, lineno, docid, "docid (column 1)")
        if docid in docs:
            raise InputFormatError(
                path, lineno, "each docid once", f"docid {docid!r} again", "remove the duplicate"
            )
        docs[docid] = _unquote(text.strip())
        empty += not docs[docid]
    if not docs:
        raise InputFormatError(path, None, "at least one document", "an empty file", TSV_FIX)
    if empty:
        logger.warning("%s: %d of %d documents have no text", path, empty, len(docs))
    return docs


def read_corpus(path: str | Path) -> dict[str, str]:
    """Read a corpus: ``{docid: text}``.

    ``path`` is a BEIR ``corpus.jsonl`` (or a folder holding one; text is
    ``f"{title} {text}".strip()``) or a ``docid<TAB>text`` TSV. The format is told by the
    suffix (``.jsonl``/``.json`` vs ``.tsv``/``.txt``), else by whether the first non-blank
    character is ``{``.
    """
    path = Path(path)
    if path.is_dir():
        path = path / "corpus.jsonl"
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".json"):
        return read_beir_corpus_jsonl(path)
    if suffix in (".tsv", ".txt"):
        return read_corpus_tsv(path)
    head = read_text(path).lstrip()[:1]
    return read_beir_corpus_jsonl(path) if head == "{" else read_corpus_tsv(path)
