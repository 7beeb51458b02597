"""Measured blocks in hand-written docs: the text between ``<!-- NAME:start -->`` and
``<!-- NAME:end -->`` is owned by the script that measured it and rewritten in place."""

from __future__ import annotations

from pathlib import Path

from presentation_dependence.errors import ConfigError
from presentation_dependence.io.atomic import atomic_write_text

__all__ = ["markers", "splice", "splice_file"]


def markers(name: str) -> tuple[str, str]:
    return f"<!-- {name}:start -->", f"<!-- {name}:end -->"


def splice(doc: str, block: str, start: str, end: str) -> str:
    """``doc`` with the text between the ``start`` and ``end`` markers replaced by ``block``."""
    if doc.count(start) != 1 or doc.count(end) != 1 or doc.index(start) > doc.index(end):
        raise ValueError(f"the document needs one {start} ... {end} pair")
    head, rest = doc.split(start)
    _, tail = rest.split(end)
    return f"{head}{start}\n{block.rstrip()}\n{end}{tail}"


def splice_file(path: str | Path, name: str, block: str) -> None:
    """Rewrite the ``name`` block of the file at ``path`` (atomically)."""
    p = Path(path)
    start, end = markers(name)
    try:
        text = splice(p.read_text(encoding="utf-8"), block, start, end)
    except ValueError as err:
        raise ConfigError(f"{p}: {err}; add the two marker lines where the block goes") from err
    atomic_write_text(p, text)
