"""The vLLM readout backend: import guard, slot requests, and (GPU + vLLM only) agreement."""

from __future__ import annotations

import importlib.util

import pytest

from presentation_dependence.optional import MissingExtraError
from presentation_dependence.readout.prompt import BuiltPrompt
from presentation_dependence.readout.vllm_backend import VllmBackend, slot_requests, vllm_available
from presentation_dependence.records import Candidate, Query
from presentation_dependence.rerankers import RERANKERS
from presentation_dependence.rerankers.vllm_grade import VllmGradeOptions, VllmGradeReranker

HAS_VLLM = importlib.util.find_spec("vllm") is not None


def test_slot_requests_cut_each_prompt_before_its_grade_tokens() -> None:
    p = BuiltPrompt("t", (10, 11, 12, 13, 14, 15), (2, 5), ("a", "b"))
    assert slot_requests([p]) == [(0, 0, [10, 11]), (0, 1, [10, 11, 12, 13, 14])]


@pytest.mark.skipif(HAS_VLLM, reason="vLLM is installed")
def test_missing_vllm_names_the_extra() -> None:
    with pytest.raises(MissingExtraError, match=r"presentation-dependence\[vllm\]"):
        VllmBackend.load("some/model")
    assert VllmGradeReranker.unavailable_reason() is not None


def test_options_and_registration() -> None:
    assert RERANKERS.get("VllmGradeReranker") is VllmGradeReranker
    with pytest.raises(ValueError, match="tensor_parallel_size"):
        VllmGradeOptions(tensor_parallel_size=0)


@pytest.mark.skipif(not vllm_available(), reason="needs vLLM and a CUDA GPU")
def test_vllm_matches_transformers_on_the_same_prompts(tiny_model: str) -> None:
    from presentation_dependence.rerankers.grade import GradeReranker, GradeRerankerOptions

    cands = [Candidate(f"d{i}", f"fleas eat blood {i} " * (i + 1), i + 1) for i in range(6)]
    q = Query("q-vllm", "what do fleas eat")
    common = dict(model_name=tiny_model, dtype="float32", chunk_size=3)
    hf = GradeReranker(GradeRerankerOptions(device="cuda", **common)).rank(q, cands)
    vl = VllmGradeReranker(
        VllmGradeOptions(gpu_memory_utilization=0.3, max_model_len=2048, **common)
    ).rank(q, cands)
    for a, b in zip(hf.items, vl.items, strict=True):
        assert a.slot == b.slot
        assert max(abs(x - y) for x, y in zip(a.grade_probs, b.grade_probs, strict=True)) < 2e-3
