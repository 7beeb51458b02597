"""docs/MODELS.md is the registry's current table."""

from __future__ import annotations

from pathlib import Path

from presentation_dependence.rerankers import RERANKERS
from presentation_dependence.rerankers.catalog import models_markdown, order_free_by_construction

DOC = Path(__file__).resolve().parents[2] / "docs" / "MODELS.md"


def test_models_doc_is_current() -> None:
    assert DOC.read_text(encoding="utf-8") == models_markdown(), (
        "docs/MODELS.md is stale: run "
        "'uv run python -m presentation_dependence.rerankers.catalog docs/MODELS.md'"
    )


def test_every_builtin_reranker_is_listed() -> None:
    text = models_markdown()
    for name in RERANKERS.names():
        if RERANKERS.get(name).__module__.startswith("presentation_dependence."):
            assert f"| `{name}` |" in text


def test_order_free_flags() -> None:
    assert order_free_by_construction("MxbaiPointwise")
    assert order_free_by_construction("PointwiseGradeReranker")
    assert not order_free_by_construction("PineReranker")
    assert not order_free_by_construction("GenerativeListwiseReranker")
