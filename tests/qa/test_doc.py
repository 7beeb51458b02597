"""docs/QA.md quotes the reader template the code uses."""

from __future__ import annotations

import textwrap
from pathlib import Path

from presentation_dependence.qa.reader import QA_SHORT_V1

DOC = Path(__file__).resolve().parents[2] / "docs" / "QA.md"


def test_doc_quotes_the_reader_template() -> None:
    text = DOC.read_text(encoding="utf-8")
    start = text.index("```text", text.index("template `qa_short_v1`")) + len("```text\n")
    block = textwrap.dedent(text[start : text.index("```", start)]).rstrip("\n")
    assert block == QA_SHORT_V1.format(paragraphs="{paragraphs}", question="{question}")
