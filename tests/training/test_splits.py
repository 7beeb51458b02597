"""Disjoint query splits: overlap by qid or normalised text is refused."""

from __future__ import annotations

import pytest

from presentation_dependence.data.config import DataConfig
from presentation_dependence.training.splits import (
    SplitOverlapError,
    check_disjoint,
    load_split,
    overlaps,
)

NOVELEVAL = "fixtures/noveleval/noveleval.jsonl"


def test_same_qid_or_same_text_overlaps():
    a = [("x", "1", "What is a flea?"), ("x", "2", "other")]
    b = [("y", "1", "unrelated"), ("y", "9", "  what IS a   flea? ")]
    found = overlaps(a, b)
    assert [(x[1], y[1], why) for x, y, why in found] == [("1", "1", "same qid")]
    found = overlaps([*a[:1], ("x", "3", "WHAT is a flea?")], b[1:])
    assert [why for *_, why in found] == ["same query text", "same query text"]


def test_qid_scope_source_ignores_other_collections_ids():
    a = [("noveleval", "3", "q a")]
    assert overlaps(a, [("scifact", "3", "q b")], qid_scope="source") == []
    assert overlaps(a, [("noveleval", "3", "q b")], qid_scope="source")


def test_check_disjoint_names_the_overlap():
    with pytest.raises(SplitOverlapError, match=r"held-out queries overlap the test.*x/1 ~ y/1"):
        check_disjoint("held-out queries", [("x", "1", "a")], "test", [("y", "1", "b")])
    check_disjoint("held-out queries", [("x", "1", "a")], "test", [("y", "2", "b")])


def test_load_split_reads_data_blocks():
    refs = load_split([DataConfig(path=NOVELEVAL, max_queries=2)])
    assert [r[:2] for r in refs] == [("noveleval", "0"), ("noveleval", "1")]
