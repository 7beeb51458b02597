"""PineReranker: canonical presentation, input order ignored, but slot effects remain."""

from __future__ import annotations

from presentation_dependence.records import Candidate, Query
from presentation_dependence.rerankers.pine import PineOptions, PineReranker, canonical_order

QUERY = Query("q-pine", "what do fleas eat")


def test_canonical_order_ignores_input_order() -> None:
    cands = [Candidate(f"d{i}", f"text {i}", i + 1) for i in range(6)]
    a = [cands[i].docid for i in canonical_order(cands)]
    b = [cands[::-1][i].docid for i in canonical_order(cands[::-1])]
    assert a == b


def test_pine_scores_do_not_depend_on_input_order(tiny_model: str) -> None:
    import torch

    torch.set_num_threads(1)
    cands = [Candidate(f"d{i}", f"fleas eat blood {i}", i + 1) for i in range(5)]
    r = PineReranker(PineOptions(model_name=tiny_model, device="cpu", dtype="float32"))
    a = {it.candidate.docid: it.score for it in r.rank(QUERY, cands).items}
    b = {it.candidate.docid: it.score for it in r.rank(QUERY, cands[::-1]).items}
    assert a == b
    assert "does not establish invariance" in (PineReranker.__doc__ or "").replace("\n    ", " ")
    assert r.describe()["establishes_invariance"] is False
