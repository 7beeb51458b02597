"""Markdown tables: the one renderer every report, study table and doc generator writes with.

``markdown_table(["a", "b"], [[1, 2]])`` is::

    | a | b |
    |---|---|
    | 1 | 2 |

Each cell is ``str(cell)`` with every unescaped ``|`` escaped (``\\|``, so a cell never splits
its row) and each line break made a space (a row is one line). ``align`` gives one character per
column: ``-`` none (``---``, the default), ``l`` left (``:---``), ``r`` right (``---:``),
``c`` centre (``:---:``).
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


def markdown_row(cells: Sequence[object]) -> str:
    """One table row: ``| c1 | c2 |``, the cells escaped as the module says (an empty cell is
    two spaces, ``| a |  |``)."""
    return "| " + " | ".join(_cell(c) for c in cells) + " |"


def markdown_table(
    header: Sequence[object], rows: Sequence[Sequence[object]], align: str = ""
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
    return [markdown_row(header), rule, *(markdown_row(r) for r in rows)]
