from pathlib import Path

from presentation_dependence.config.schema_doc import schema_markdown

SCHEMA = Path(__file__).resolve().parents[2] / "configs" / "experiments" / "_schema.md"


def test_schema_doc_is_current():
    assert SCHEMA.read_text(encoding="utf-8") == schema_markdown(), (
        "configs/experiments/_schema.md is stale: run "
        "'uv run presdep schema --write configs/experiments/_schema.md'"
    )


def test_schema_mentions_every_block_and_reranker():
    text = schema_markdown()
    for needle in ("## `data`", "## `eval`", "## `reranker`", "IdentityReranker", "top_k"):
        assert needle in text
