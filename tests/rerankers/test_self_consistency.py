"""BatchedSelfConsistencyReranker on the tiny random model: K orders, cost, determinism."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from presentation_dependence.errors import ConfigError
from presentation_dependence.fields import build_dataclass
from presentation_dependence.presentations import draw_orders
from presentation_dependence.records import Candidate, Query
from presentation_dependence.rerankers import RERANKERS, Paradigm, build_reranker
from presentation_dependence.rerankers.base import RerankerConfig
from presentation_dependence.rerankers.grade import GradeReranker, PointwiseGradeReranker
from presentation_dependence.rerankers.self_consistency import (
    BatchedSelfConsistencyOptions,
    BatchedSelfConsistencyReranker,
)

QUERY = Query("q1", "how long is the life cycle of a flea")
WORDS = ["flea", "egg", "larva", "pupa", "host", "cat", "dog", "year", "day", "blood", "jump"]


def candidates(n: int, seed: int = 0) -> list[Candidate]:
    rng = random.Random(seed)
    return [
        Candidate(f"d{i}", " ".join(rng.choices(WORDS, k=rng.randint(5, 25))), rank=i + 1)
        for i in range(n)
    ]


def base_block(tiny: str, cls: str = "GradeReranker", **kw: Any) -> dict[str, Any]:
    return {"reranker_class": cls, "model_name": tiny, "device": "cpu", "dtype": "float32", **kw}


def bsc(tiny: str, base: dict[str, Any] | None = None, **kw: Any) -> BatchedSelfConsistencyReranker:
    opts = BatchedSelfConsistencyOptions(base=base or base_block(tiny, chunk_size=4), **kw)
    return BatchedSelfConsistencyReranker(opts)


def by_doc(res: Any) -> dict[str, float]:
    return {it.candidate.docid: it.score for it in res.items}


def test_registered_and_base_normalised_eagerly() -> None:
    assert RERANKERS.get("BatchedSelfConsistencyReranker") is BatchedSelfConsistencyReranker
    assert BatchedSelfConsistencyReranker.paradigm is Paradigm.MITIGATION
    opts = BatchedSelfConsistencyOptions()
    assert opts.num_orders == 10 and opts.seed == 0 and opts.include_given_order is False
    # the default block, with the base's defaults filled in (resolved configs are explicit)
    assert opts.base["reranker_class"] == "GradeReranker"
    assert opts.base["chunk_size"] == 20 and opts.base["grade_labels"] == ["0", "1", "2", "3"]
    cfg = RerankerConfig.from_raw(
        {
            "reranker_class": "BatchedSelfConsistencyReranker",
            "num_orders": 3,
            "base": {"reranker_class": "CapCalGradeReranker", "alpha": 0.5},
        }
    )
    plain = cfg.to_plain()
    assert plain["base"]["alpha"] == 0.5 and plain["base"]["method"] == "capcal"
    # the resolved block round-trips
    assert RerankerConfig.from_raw(plain).to_plain() == plain
    r = build_reranker("BatchedSelfConsistencyReranker", cfg.options)
    assert type(r.base).__name__ == "CapCalGradeReranker"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"num_orders": 0}, "num_orders"),
        ({"num_orders": True}, "num_orders"),
        ({"seed": -1}, "seed"),
        ({"include_given_order": "yes"}, "include_given_order"),
        ({"base": "GradeReranker"}, "base"),
        ({"base": {"chunk_size": 4}}, "reranker_class"),
        ({"base": {"reranker_class": "GradeRerankr"}}, "Did you mean 'GradeReranker'"),
        ({"base": {"reranker_class": "GradeReranker", "chunk": 4}}, "base: unknown config key"),
        ({"base": {"reranker_class": "GradeReranker", "chunk_size": 0}}, "chunk_size"),
    ],
)
def test_options_are_validated(kw: dict[str, Any], match: str) -> None:
    """As a config block is built (types checked by build_dataclass, ranges by the options)."""
    with pytest.raises(ConfigError, match=match):
        build_dataclass(BatchedSelfConsistencyOptions, kw)


def test_orders_depend_on_seed_and_qid_only() -> None:
    a = draw_orders(9, "q1", num_orders=5, seed=0)
    assert a == draw_orders(9, "q1", num_orders=5, seed=0)
    assert all(sorted(p) == list(range(9)) for p in a)
    assert a != draw_orders(9, "q1", num_orders=5, seed=1)
    assert a != draw_orders(9, "q2", num_orders=5, seed=0)
    given = draw_orders(9, "q1", num_orders=5, seed=0, include_given_order=True)
    assert given[0] == list(range(9)) and given[1:] == a[:4]


def test_k_orders_cost_k_times_the_base(tiny_model: str) -> None:
    cands = candidates(9)
    r = bsc(tiny_model, num_orders=5)
    res = r.rank(QUERY, cands)
    orders = res.details["presentations"]
    assert len(orders) == 5 and len({tuple(o) for o in orders}) == 5
    assert res.details["distinct_presentations"] == 5
    base = GradeReranker(r.base.options)  # type: ignore[attr-defined]
    runs = [base.rank(QUERY, [cands[i] for i in o]) for o in orders]
    assert runs[0].cost.forward_passes == 3  # 9 candidates at B=4: chunks 4, 4, 1
    assert res.cost.forward_passes == 5 * 3
    assert res.cost.prompt_tokens == sum(x.cost.prompt_tokens for x in runs)
    # scores are the per-candidate means, aligned by candidate, not by slot
    expected = {c.docid: np.mean([by_doc(x)[c.docid] for x in runs]) for c in cands}
    got = by_doc(res)
    assert got == pytest.approx(expected, abs=1e-12)
    for it in res.items:
        d = it.details
        assert len(d["order_scores"]) == 5 and d["score_std"] == pytest.approx(
            float(np.std(d["order_scores"])), abs=1e-12
        )
        assert [orders[j][pos] for j, pos in enumerate(d["order_positions"])] == [
            it.input_index
        ] * 5
        assert d["order_slots"] == [pos % 4 + 1 for pos in d["order_positions"]]
        assert len(d["order_grade_probs"]) == 5
    assert [it.candidate for it in res.items] == cands


def test_same_seed_same_scores_other_seed_other_orders(tiny_model: str) -> None:
    cands = candidates(9, seed=1)
    a = bsc(tiny_model, num_orders=3, seed=7).rank(QUERY, cands)
    b = bsc(tiny_model, num_orders=3, seed=7).rank(QUERY, cands)
    c = bsc(tiny_model, num_orders=3, seed=8).rank(QUERY, cands)
    assert [it.score for it in a.items] == [it.score for it in b.items]
    assert a.details["presentations"] == b.details["presentations"]
    assert a.details["presentations"] != c.details["presentations"]
    assert [it.score for it in a.items] != [it.score for it in c.items]
    # a query's orders do not depend on what was ranked before it
    r = bsc(tiny_model, num_orders=3, seed=7)
    r.rank(Query("other", "flea eggs"), cands)
    assert r.rank(QUERY, cands).details["presentations"] == a.details["presentations"]


def test_over_a_pointwise_base_it_equals_the_base(tiny_model: str) -> None:
    cands = candidates(7, seed=2)
    block = base_block(tiny_model, "PointwiseGradeReranker")
    res = bsc(tiny_model, base=block, num_orders=4).rank(QUERY, cands)
    pw = build_reranker("PointwiseGradeReranker", RerankerConfig.from_raw(block).options)
    assert isinstance(pw, PointwiseGradeReranker)
    base = pw.rank(QUERY, cands)
    assert by_doc(res) == pytest.approx(by_doc(base), abs=1e-9)
    assert max(it.details["score_std"] for it in res.items) < 1e-9
    assert res.cost.forward_passes == 4 * 7


def test_reduces_the_spread_across_input_orders(tiny_model: str) -> None:
    cands = candidates(8, seed=3)
    flipped = cands[::-1]
    base = GradeReranker(RerankerConfig.from_raw(base_block(tiny_model, chunk_size=8)).options)
    b1, b2 = by_doc(base.rank(QUERY, cands)), by_doc(base.rank(QUERY, flipped))
    r = bsc(tiny_model, base=base_block(tiny_model, chunk_size=8), num_orders=16)
    m1, m2 = by_doc(r.rank(QUERY, cands)), by_doc(r.rank(QUERY, flipped))
    base_gap = np.mean([abs(b1[d] - b2[d]) for d in b1])
    bsc_gap = np.mean([abs(m1[d] - m2[d]) for d in m1])
    # K = 16 independent orders: the gap of two K-means shrinks about 1/sqrt(K) = 0.25
    assert base_gap > 0.05
    assert bsc_gap < 0.6 * base_gap


def test_duplicate_presentations_are_scored_once(tiny_model: str) -> None:
    one = candidates(1)
    res = bsc(tiny_model, num_orders=4).rank(QUERY, one)
    assert res.details["presentations"] == [[0]] * 4
    assert res.details["distinct_presentations"] == 1 and res.cost.forward_passes == 1
    assert res.items[0].details["score_std"] == 0.0
    empty = bsc(tiny_model, num_orders=4).rank(QUERY, [])
    assert empty.items == () and empty.cost.forward_passes == 0


def test_identity_base_and_describe(tiny_model: str) -> None:
    r = bsc(tiny_model, base={"reranker_class": "IdentityReranker"}, num_orders=3)
    res = r.rank(QUERY, candidates(5))
    assert [it.rank for it in res.items] == [1, 2, 3, 4, 5]
    assert res.cost.forward_passes == 0
    info = r.describe()
    assert info["base"] == {"reranker_class": "IdentityReranker"}
    assert info["num_orders"] == 3 and info["paradigm"] == "mitigation"
