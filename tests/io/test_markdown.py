"""The one Markdown table renderer: layout, alignment, escaping, checks."""

from __future__ import annotations

import pytest

from presentation_dependence.io.markdown import markdown_row, markdown_table


def test_layout_and_default_rule() -> None:
    assert markdown_table(["a", "b"], [[1, 2.5], ["x", None]]) == [
        "| a | b |",
        "|---|---|",
        "| 1 | 2.5 |",
        "| x | None |",
    ]
    assert markdown_table(["only"], []) == ["| only |", "|---|"]
    assert markdown_table(["key", "meaning"], [["a", ""]])[2] == "| a |  |"


def test_alignment() -> None:
    assert markdown_table(["a", "b", "c", "d"], [], align="-lrc")[1] == "|---|:---|---:|:---:|"


def test_escaping_pipes_and_line_breaks() -> None:
    assert markdown_row(["a|b", "`int \\| None`", "two\nlines"]) == (
        "| a\\|b | `int \\| None` | two lines |"
    )


def test_refuses_a_ragged_table_or_an_unknown_alignment() -> None:
    with pytest.raises(ValueError, match="row 0 has 1 cells"):
        markdown_table(["a", "b"], [["x"]])
    with pytest.raises(ValueError, match="one of '-lrc'"):
        markdown_table(["a", "b"], [], align="rx")
    with pytest.raises(ValueError, match="one of '-lrc'"):
        markdown_table(["a", "b"], [], align="r")


def test_compact_empty_cells_and_the_key_value_header() -> None:
    assert markdown_table(["", ""], [["k", ""]], compact_empty=True) == [
        "| | |",
        "|---|---|",
        "| k | |",
    ]
    assert markdown_table(["a", "b"], [["1", ""]]) == ["| a | b |", "|---|---|", "| 1 |  |"]
    # a key holding pipes stays one cell
    assert (
        markdown_table(["", ""], [["max |x|", 1]], compact_empty=True)[2] == "| max \\|x\\| | 1 |"
    )
