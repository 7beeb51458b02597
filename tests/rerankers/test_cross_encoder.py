"""MxbaiPointwise on the tiny model; JinaListwiseReranker's refusal without trust_remote_code."""

from __future__ import annotations

import math

import pytest

from presentation_dependence.errors import ConfigError
from presentation_dependence.records import Candidate, Query
from presentation_dependence.rerankers import RERANKERS
from presentation_dependence.rerankers.cross_encoder import (
    JinaListwiseOptions,
    JinaListwiseReranker,
    MxbaiPointwise,
    MxbaiPointwiseOptions,
)

QUERY = Query("q-ce", "what do fleas eat")


def cands() -> list[Candidate]:
    return [Candidate(f"d{i}", f"fleas eat blood {'x ' * i}", i + 1) for i in range(4)]


def test_mxbai_scores_are_3_sigmoid_of_the_logit_difference(tiny_model: str) -> None:
    import torch

    torch.set_num_threads(1)
    opts = MxbaiPointwiseOptions(model_name=tiny_model, device="cpu", dtype="float32")
    r = MxbaiPointwise(opts)
    res = r.rank(QUERY, cands())
    backend, (no_id, yes_id) = r._ensure_loaded()
    prompt = r.build_prompt(QUERY.text, cands()[2].text)
    with torch.inference_mode():
        logits = backend.model(torch.tensor([prompt.input_ids])).logits[0, -1].float()
    d = float(logits[yes_id] - logits[no_id])
    assert math.isclose(res.items[2].details["logit_diff"], d, rel_tol=1e-4, abs_tol=1e-4)
    assert math.isclose(res.items[2].score, 3 / (1 + math.exp(-d)), rel_tol=1e-5)
    rev = {it.candidate.docid: it.score for it in r.rank(QUERY, cands()[::-1]).items}
    assert rev == {it.candidate.docid: it.score for it in res.items}
    assert r.describe()["label_token_ids"] == [no_id, yes_id]


def test_mxbai_refuses_multi_token_labels(tiny_model: str) -> None:
    opts = MxbaiPointwiseOptions(
        model_name=tiny_model, device="cpu", dtype="float32", yes_label="definitely relevant"
    )
    with pytest.raises(ConfigError, match="one token"):
        MxbaiPointwise(opts).rank(QUERY, cands())


def test_jina_refuses_without_trust_remote_code() -> None:
    assert RERANKERS.get("JinaListwiseReranker") is JinaListwiseReranker
    r = JinaListwiseReranker(JinaListwiseOptions())
    assert r.rank(QUERY, []).items == ()
    with pytest.raises(ConfigError, match="trust_remote_code: true"):
        r.rank(QUERY, cands())
    assert JinaListwiseReranker.requires_remote_code
