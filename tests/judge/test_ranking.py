"""Response ranking with the readout (and, for hand-checked values, the identity reranker)."""

from __future__ import annotations

import numpy as np
import pytest

from presentation_dependence.judge.ranking import rank_responses
from presentation_dependence.metrics import tau_psi
from presentation_dependence.rerankers import build_reranker
from presentation_dependence.rerankers.grade import GradeRerankerOptions
from tests.judge.conftest import make_items


def test_identity_reranker_by_hand() -> None:
    items = make_items(8)
    per_item, summary = rank_responses(
        items,
        build_reranker("IdentityReranker"),
        num_presentations=5,
        seed=0,
        rng=np.random.default_rng(0),
        n_resamples=200,
    )
    flips = []
    for it, rec in zip(items, per_item, strict=True):
        perms = np.asarray(rec["presentations"])
        c = it.correct_index
        assert rec["ndcg"] == [float(it.labels[p[0]]) for p in perms]
        pos = np.argsort(perms, axis=1)  # pos[m, j] = slot of response j
        scores = 1.0 / (pos + 1)
        assert np.allclose(rec["scores"], scores)
        assert rec["tau_psi"] == pytest.approx(tau_psi(scores))
        pref = [[pos[m, c] < pos[m, w] for w in range(4) if w != c] for m in range(5)]
        assert rec["pref"] == np.asarray(pref, dtype=int).tolist()
        flips += [len(set(col)) > 1 for col in np.asarray(pref).T]
    assert summary["pair_flip_rate"] == pytest.approx(np.mean(flips))
    assert summary["ndcg"]["mean"] == pytest.approx(np.mean([r["ndcg_mean"] for r in per_item]))
    assert summary["pairs"] == 8 * 3
    assert summary["ndcg_chance"] == pytest.approx(0.25)  # one correct among four
    again, _ = rank_responses(
        items,
        build_reranker("IdentityReranker"),
        num_presentations=5,
        seed=0,
        rng=np.random.default_rng(0),
        n_resamples=200,
    )
    assert again == per_item


def test_grade_reranker_chunks_of_four(tiny_model: str) -> None:
    items = make_items(2, k=6)
    opts = GradeRerankerOptions(model_name=tiny_model, chunk_size=4, device="cpu", dtype="float32")
    per_item, summary = rank_responses(
        items,
        build_reranker("GradeReranker", opts),
        num_presentations=2,
        seed=1,
        rng=np.random.default_rng(0),
        n_resamples=100,
    )
    assert summary["items"] == 2 and summary["pairs"] == 2 * 5
    for rec in per_item:
        assert np.asarray(rec["scores"]).shape == (2, 6)
        assert sorted(np.asarray(rec["slots"])[0].tolist()) == [1, 1, 2, 2, 3, 4]  # 4 + 2
        assert 0.0 <= rec["tau_psi"] <= 1.0


def test_items_without_pairs_are_skipped() -> None:
    items = make_items(3)
    allright = items[0].__class__("all", "p", ("a", "b"), (True, True), "t")
    _, summary = rank_responses(
        [*items, allright],
        build_reranker("IdentityReranker"),
        num_presentations=2,
        seed=0,
        rng=np.random.default_rng(0),
        n_resamples=100,
    )
    assert (summary["items"], summary["skipped_items"]) == (3, 1)
