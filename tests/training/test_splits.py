"""Disjoint query splits: overlap by qid or normalised text is refused."""

from __future__ import annotations

import pytest

from presentation_dependence.data.config import DataConfig
from presentation_dependence.errors import ConfigError
from presentation_dependence.training.splits import (
    SplitOverlapError,
    check_disjoint,
    load_queries,
    load_split,
    overlaps,
    stratified_head,
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
    refs = load_split([DataConfig(path=NOVELEVAL, max_queries=2)], "splits.test")
    assert [r[:2] for r in refs] == [("noveleval", "0"), ("noveleval", "1")]


def test_stratified_head_keeps_every_source_in_proportion():
    queries = [("a", f"a{i}", {}) for i in range(50)] + [("b", f"b{i}", {}) for i in range(30)]
    queries += [("c", f"c{i}", {}) for i in range(10)] + [("d", f"d{i}", {}) for i in range(3)]
    head = stratified_head(queries, 40)  # shares 21.5, 12.9, 4.3, 1.3
    counts = {s: sum(1 for q in head if q[0] == s) for s in "abcd"}
    assert counts == {"a": 22, "b": 13, "c": 4, "d": 1} and len(head) == 40
    assert [q[1] for q in head if q[0] == "b"] == [f"b{i}" for i in range(13)]  # first, in order
    assert head == [q for q in queries if q in head]  # the overall order is kept
    assert stratified_head(queries, None) == queries == stratified_head(queries, 200)


def test_a_missing_file_names_the_key_it_has_in_the_training_config(tmp_path):
    """A held-out block's missing file is named by its training-config key and the hint
    overrides that key (``data.path`` does not exist in a training config)."""
    blocks = [DataConfig(path=NOVELEVAL), DataConfig(path=str(tmp_path / "gone.jsonl"))]
    with pytest.raises(ConfigError) as info:
        load_queries(blocks, "splits.heldout")
    text = str(info.value)
    assert "splits.heldout.1.path: none of these paths exists" in text
    assert "--override splits.heldout.1.path=PATH" in text and "data.path" not in text
    assert info.value.key == "splits.heldout.1.path"
