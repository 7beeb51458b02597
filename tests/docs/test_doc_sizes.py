"""Every reference page directly under docs/ stays readable: at most 20 KiB (issue 41, item 7).

Study reports (docs/studies/), archived results (docs/results/) and the generated config
schemas (docs/schema/) have no budget; a reference page that outgrows it moves its measured
parts to a page under docs/studies/ or splits into two reference pages.
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
BUDGET = 20_480  # bytes


def test_there_are_reference_pages() -> None:
    assert len(list(DOCS.glob("*.md"))) >= 10, "docs/*.md not found"


def test_every_reference_page_is_within_its_size_budget() -> None:
    over = {
        p.relative_to(REPO).as_posix(): p.stat().st_size
        for p in sorted(DOCS.glob("*.md"))
        if p.stat().st_size > BUDGET
    }
    assert not over, "over the budget of {} bytes: {}".format(
        BUDGET, ", ".join(f"{name} ({size:,} bytes)" for name, size in over.items())
    )
