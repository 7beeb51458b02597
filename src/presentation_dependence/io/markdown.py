"""Markdown tables: the one renderer every report, study table and doc generator writes with.

``markdown_table(["a", "b"], [[1, 2]])`` is::

    | a | b |
    |---|---|
    | 1 | 2 |

Each cell is ``str(cell)`` with every unescaped ``|`` escaped (``\\|``, so a cell never splits
its row) and each line break made a space (a row is one line). ``align`` gives one character per
column: ``-`` none (``---``, the default), ``l`` left (``:---``), ``r`` right (``---:``),
``c`` centre (``:---:``). An empty cell is two spaces between its pipes (``| a |  |``), or
one with ``compact_empty`` (``| a | |``, the form of the key/value tables under an empty header,
``| | |``, and of the older committed tables).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["markdown_row", "markdown_table"]

_RULES = {"-": "---", "l": ":---", "r": "---:", "c": ":---:"}
_UNESCAPED_PIPE = re.compile(r"(?<!\\)\|")


def _cell(value: object) -> str:
    text = " ".join(str(value).splitlines())
    return _UNESCAPED_PIPE.sub(r"\\|", text)


def markdown_row(cells: Sequence[object], compact_empty: bool = False) -> str:
    """One table row: ``| c1 | c2 |``, the cells escaped as the module says (an empty cell is
    two spaces, ``| a |  |``; one with ``compact_empty``)."""
    if not compact_empty:
        return "| " + " | ".join(_cell(c) for c in cells) + " |"
    texts = (_cell(c) for c in cells)
    return "|" + "|".join(f" {t} " if t else " " for t in texts) + "|"


def markdown_table(
    header: Sequence[object],
    rows: Sequence[Sequence[object]],
    align: str = "",
    compact_empty: bool = False,
) -> list[str]:
    """The lines of a table: the header, the rule (``align``, module doc) and one line per row.

    Raises ``ValueError`` when ``align`` or a row has another width than the header, or when
    ``align`` holds a character other than ``-lrc``.
    """
    align = align or "-" * len(header)
    if len(align) != len(header) or set(align) - set(_RULES):
        raise ValueError(f"align {align!r}: one of '-lrc' per column ({len(header)} columns)")
    for i, row in enumerate(rows):
        if len(row) != len(header):
            raise ValueError(f"row {i} has {len(row)} cells, the header {len(header)}")
    rule = "|" + "|".join(_RULES[a] for a in align) + "|"
    return [
        markdown_row(header, compact_empty),
        rule,
        *(markdown_row(r, compact_empty) for r in rows),
    ]
