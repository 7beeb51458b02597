"""What a silver file can teach (training/silver_quality.py), on hand-made teacher scores."""

from __future__ import annotations

import numpy as np
import pytest

from presentation_dependence.records import Candidate, Qrels
from presentation_dependence.training.silver import SilverQuery
from presentation_dependence.training.silver_quality import (
    silver_quality,
    silver_quality_markdown,
)


def _query(qid: str, order_scores: list[list[float]]) -> SilverQuery:
    n = len(order_scores[0])
    cands = tuple(Candidate(f"d{i}", f"text {i}", i + 1) for i in range(n))
    return SilverQuery(
        source="toy",
        qid=qid,
        query="q",
        candidates=cands,
        presentations=np.tile(np.arange(n), (len(order_scores), 1)),
        order_scores=np.array(order_scores, dtype=np.float64),
        teacher_id="t",
    )


def test_teacher_that_reverses_the_first_stage():
    # relevant d0 is ranked first by the first stage; the teacher puts it last in both orders
    q = _query("q1", [[0.0, 1.0, 2.0], [0.0, 2.0, 1.0]])
    qrels = {"toy": Qrels({"q1": {"d0": 1}})}
    out = silver_quality([q], qrels, k=10)
    row = out["sources"]["toy"]
    assert row["ndcg_first_stage"] == pytest.approx(1.0)
    assert row["ndcg_single_order"] == pytest.approx(0.5)  # 1/log2(4)
    assert row["ndcg_order_mean"] == pytest.approx(0.5)
    # the two orders disagree on d1 vs d2 only: τ = 1/3, τ-PSI = 1/3
    assert row["tau_psi"] == pytest.approx(1 / 3)
    assert row["label_spread"] == pytest.approx(np.std([0.0, 1.5, 1.5]))
    assert out["sources"]["all"]["queries"] == 1
    assert "| toy | 1 | 1.000 |" in silver_quality_markdown(out, 2)


def test_unjudged_queries_are_skipped_and_counted():
    out = silver_quality([_query("q2", [[1.0, 0.0]])], {"toy": Qrels({"q2": {"d0": 0}})})
    assert out["skipped_unjudged"] == 1 and out["sources"] == {}
