"""The measured block of docs/BENCHMARKS.md is the committed run's results, re-rendered."""

from __future__ import annotations

import json
from pathlib import Path

from presdep_tools.bench.report import full_markdown
from presentation_dependence.report.markers import markers, splice

REPO = Path(__file__).resolve().parents[2]


def test_the_benchmarks_block_renders_from_the_committed_run() -> None:
    results = json.loads((REPO / "docs" / "results" / "bench-run.json").read_text("utf-8"))
    doc = (REPO / "docs" / "BENCHMARKS.md").read_text(encoding="utf-8")
    start, end = markers("benchmarks")
    assert splice(doc, full_markdown(results), start, end) == doc, (
        "docs/BENCHMARKS.md is stale: run 'uv run poe bench --render-only'"
    )
