"""Every config family's schema page is generated from its dataclasses and committed current."""

import dataclasses
import typing
from pathlib import Path

import pytest

from presentation_dependence.cli import main
from presentation_dependence.cli.schema_families import FAMILIES, family_markdown
from presentation_dependence.config.schema_doc import schema_markdown

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", list(FAMILIES))
def test_each_family_page_is_current(name):
    page = ROOT / FAMILIES[name].page
    assert page.read_text(encoding="utf-8") == family_markdown(name), (
        f"{FAMILIES[name].page} is stale: run 'uv run presdep schema all'"
    )


def _needles(cls: type, prefix: str = "") -> list[str]:
    """What a family's page must show for ``cls``: a table row per plain key, a section per
    block (``prefix.name``; ``.N`` for a list of blocks, ``.NAME`` for a mapping of them)."""
    out = []
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        tp = hints[f.name]
        origin, args = typing.get_origin(tp), typing.get_args(tp)
        if dataclasses.is_dataclass(tp):
            block, index = tp, ""
        elif origin is list and args and dataclasses.is_dataclass(args[0]):
            block, index = args[0], ".N"
        elif origin is dict and args and dataclasses.is_dataclass(args[-1]):
            block, index = args[-1], ".NAME"
        else:
            out.append(f"| `{f.name}` |")
            continue
        if f.name != "reranker":
            out.append(f"## `{prefix}{f.name}{index}`")
            out += _needles(block, f"{prefix}{f.name}{index}.")
    return out


@pytest.mark.parametrize("name", [n for n in FAMILIES if n != "experiment"])
def test_each_family_page_names_every_key_of_its_dataclass(name):
    text = family_markdown(name)
    for needle in _needles(FAMILIES[name].cls):
        assert needle in text, f"{name}: {needle} missing"
    assert "PRESDEP_" + name.upper() + "__" in text  # the family's own environment prefix


def test_schema_mentions_every_block_and_reranker():
    text = schema_markdown()
    for needle in ("## `data`", "## `eval`", "## `reranker`", "IdentityReranker", "top_k"):
        assert needle in text


def test_list_blocks_are_sections_indexed_by_number():
    text = family_markdown("training")
    assert "## `silver.data.N`" in text and "## `splits.heldout.N`" in text
    assert "## `steps.N`" in family_markdown("plan")


def test_the_command_prints_a_family_and_refuses_an_unknown_one(capsys, caplog):
    assert main(["schema", "judge"]) == 0
    assert capsys.readouterr().out == family_markdown("judge")
    assert main(["schema", "trainig"]) == 2
    assert "Did you mean 'training'?" in caplog.text


def test_the_index_links_every_family_page():
    index = (ROOT / "docs/schema/README.md").read_text(encoding="utf-8")
    for fam in FAMILIES.values():
        assert f"| `{fam.name}` |" in index and Path(fam.page).name in index
