"""Views and the collator: seeded distinct views, slot bookkeeping, padded batches."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from presentation_dependence.readout.prompt import PromptBuilder, get_template
from presentation_dependence.training.collate import (
    ReadoutCollator,
    SilverDataset,
    TrainExample,
    draw_views,
    grade_token_ids,
)
from tests.training.conftest import PASSAGE_CHARS


@pytest.fixture(scope="module")
def builder(tiny_model):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model)
    b = PromptBuilder(
        tok, get_template("pathc_grade_v1"), ("0", "1", "2", "3"), max_passage_chars=PASSAGE_CHARS
    )
    grade_token_ids(b)
    return b


def test_views_are_seeded_distinct_and_epoch_dependent():
    a = draw_views(6, 2, seed=0, key="s/q1", epoch=0)
    assert a.shape == (2, 6) and not np.array_equal(a[0], a[1])
    np.testing.assert_array_equal(a, draw_views(6, 2, seed=0, key="s/q1", epoch=0))
    assert not np.array_equal(a, draw_views(6, 2, seed=0, key="s/q1", epoch=1))
    assert not np.array_equal(a, draw_views(6, 2, seed=0, key="s/q2", epoch=0))
    assert draw_views(1, 2, seed=0, key="k", epoch=0).tolist() == [[0], [0]]
    two = draw_views(2, 2, seed=3, key="k", epoch=0).tolist()
    assert sorted(two) == [[0, 1], [1, 0]]
    first = draw_views(5, 2, seed=0, key="k", epoch=0, teacher_order=[4, 3, 2, 1, 0])
    assert first[0].tolist() == [4, 3, 2, 1, 0]


def test_dataset_labels_views_and_epochs(silver):
    ds = SilverDataset(silver.queries, teacher_orders=3, views=2, seed=0)
    ex = ds[0]
    np.testing.assert_allclose(ex.labels, silver.queries[0].order_scores.mean(axis=0))
    ds.set_epoch(1)
    assert not np.array_equal(ds[0].views, ex.views)
    teacher = SilverDataset(silver.queries, teacher_orders=1, views=1, view_orders="teacher")
    np.testing.assert_array_equal(teacher[1].views[0], silver.queries[1].presentations[0])
    with pytest.raises(Exception, match="chunk_size"):
        SilverDataset(silver.queries, teacher_orders=1, views=1, max_candidates=3)


def _example(n: int, views: list[list[int]], key: str = "s/q") -> TrainExample:
    texts = tuple(f"passage number {i} about fleas and cats" for i in range(n))
    return TrainExample(key, "what do fleas eat", texts, np.linspace(0, 3, n), np.array(views))


def test_collator_slots_point_at_the_token_before_each_filler(builder):
    batch = ReadoutCollator(builder, pad_token_id=0)([_example(4, [[2, 0, 3, 1]])])
    filler = builder.grade_token_ids[1]
    ids, pos = batch["input_ids"][0], batch["readout_positions"][0]
    assert all(int(ids[p + 1]) == filler for p in pos)
    assert batch["slot_candidates"][0].tolist() == [2, 0, 3, 1]
    assert batch["teacher_scores"][0].tolist() == pytest.approx([0, 1, 2, 3])
    built = builder.build(
        "what do fleas eat", [f"passage number {i} about fleas and cats" for i in (2, 0, 3, 1)]
    )
    assert ids.tolist() == list(built.input_ids)


def test_collator_pads_lists_of_different_lengths(builder):
    long, short = (
        _example(5, [[0, 1, 2, 3, 4], [4, 3, 2, 1, 0]], "a"),
        _example(2, [[1, 0], [0, 1]], "b"),
    )
    b = ReadoutCollator(builder, pad_token_id=7)([long, short])
    assert b["input_ids"].shape[0] == 4 and b["readout_positions"].shape == (4, 5)
    assert b["slot_mask"].tolist()[2] == [True, True, False, False, False]
    assert b["slot_candidates"][2].tolist() == [1, 0, 5, 5, 5]  # padding -> column N (dropped)
    assert b["candidate_mask"].tolist() == [[True] * 5, [True, True, False, False, False]]
    width = b["input_ids"].shape[1]
    short_len = int(b["attention_mask"][2].sum())
    assert (b["input_ids"][2, : width - short_len] == 7).all()  # left padding
    pos = b["position_ids"][2, width - short_len :]
    assert pos.tolist() == list(range(short_len))
    assert torch.equal(b["attention_mask"].sum(-1) > 0, torch.ones(4, dtype=torch.bool))
    with pytest.raises(ValueError, match="view counts"):
        ReadoutCollator(builder, 0)([long, _example(2, [[0, 1]])])


def test_identical_views_share_one_prompt_row(builder):
    b = ReadoutCollator(builder, 0)(
        [_example(3, [[2, 1, 0], [2, 1, 0]], "a"), _example(3, [[0, 1, 2], [1, 0, 2]], "b")]
    )
    assert b["input_ids"].shape[0] == 3
    assert b["view_rows"].tolist() == [[0, 0], [1, 2]]
