"""The contract every registered reranker keeps (compare peft's PeftCommonTester).

Run over every reranker registered by this package, each on the tiny random model where it
takes a model: result shape, input identity and order kept, scores finite and in [0, 3],
deterministic reruns, batched vs one-at-a-time agreement, for rerankers that declare
themselves pointwise, scores that do not depend on the candidate order, and, for listwise
readouts, the typed readout fields (slot, chunk, grade distribution) and the cost of every call.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import random
import tempfile
from pathlib import Path

import numpy as np
import pytest

from presentation_dependence.errors import RerankerContractError
from presentation_dependence.presentations import score_presentations
from presentation_dependence.records import Candidate, Query, RankResult
from presentation_dependence.rerankers import RERANKERS, Paradigm, Reranker
from presentation_dependence.rerankers.grade import GradeReranker

BUILTIN = sorted(
    n
    for n in RERANKERS.names()
    if RERANKERS.get(n).__module__.startswith("presentation_dependence.")
)
QUERY = Query("q-contract", "what do fleas eat")
WORDS = ["flea", "blood", "host", "cat", "dog", "larva", "egg", "adult", "feed", "skin", "bite"]


def make_candidates(n: int = 9, seed: int = 3) -> list[Candidate]:
    rng = random.Random(seed)
    return [
        Candidate(f"doc-{i}", " ".join(rng.choices(WORDS, k=rng.randint(4, 20))), i + 1, 10.0 - i)
        for i in range(n)
    ]


@functools.cache
def contract_qrels() -> Path:
    """Judgements of a few contract candidates (grades 0..3), for the gold-label teacher."""
    path = Path(tempfile.mkdtemp(prefix="presdep-contract-")) / "qrels.txt"
    path.write_text(
        "".join(f"{QUERY.qid} 0 doc-{i} {g}\n" for i, g in ((0, 1), (2, 3), (4, 0), (5, 2))),
        encoding="utf-8",
    )
    return path


def build(name: str, tiny_model: str, **overrides: object) -> Reranker:
    cls = RERANKERS.get(name)
    fields = {f.name for f in dataclasses.fields(cls.config_cls)}
    kw: dict[str, object] = {}
    reason = getattr(cls, "unavailable_reason", lambda: None)()
    if reason:
        pytest.skip(f"{name}: {reason}")
    if "base_url" in fields:  # an API reranker: a loopback server serving the tiny model
        from presdep_tools.testing.chat_server import shared_chat_server_url

        kw.update(base_url=shared_chat_server_url(tiny_model), model=tiny_model, use_cache=False)
        if "max_missing_fraction" in fields:  # the random tiny model writes no parseable grade;
            kw["max_missing_fraction"] = 1.0  # the contract is about shape, not grading
    if "model_name" in fields:
        kw.update(model_name=tiny_model, device="cpu", dtype="float32")
    if "qrels" in fields:  # the gold-label teacher: judgements of the contract candidates
        kw["qrels"] = str(contract_qrels())
    if "chunk_size" in fields and cls.paradigm is not Paradigm.POINTWISE:
        kw["chunk_size"] = 4  # 9 candidates -> chunks of 4, 4, 1
    if "base" in fields:  # a wrapper (BatchedSelfConsistencyReranker): its base on the tiny model
        base = {
            "reranker_class": "GradeReranker",
            "model_name": tiny_model,
            "device": "cpu",
            "dtype": "float32",
            "chunk_size": 4,
        }
        base.update({k: v for k, v in overrides.items() if k in ("batch_size", "one_at_a_time")})
        kw.update(base=base, num_orders=3)
    if "members" in fields:  # a fusion: the gold labels and the pointwise readout, fused
        kw["members"] = [
            {"reranker_class": "GoldQrelsReranker", "qrels": str(contract_qrels())},
            {
                "reranker_class": "PointwiseGradeReranker",
                "model_name": tiny_model,
                "device": "cpu",
                "dtype": "float32",
            },
        ]
    kw.update({k: v for k, v in overrides.items() if k in fields})
    return cls(cls.config_cls(**kw))  # type: ignore[call-arg]


def is_listwise_readout(cls: type) -> bool:
    """Rerankers that read grades at slots of a prompt: the listwise paradigm and every reranker
    built on the expected-grade readout (CapCal, PINE, the pointwise skeleton, vLLM)."""
    return getattr(cls, "paradigm", None) is Paradigm.LISTWISE_READOUT or issubclass(
        cls, GradeReranker
    )


def readout_problems(res: RankResult) -> list[str]:
    """What a listwise readout's result lacks (empty: nothing)."""
    problems = [] if res.cost is not None else ["no cost (forward passes, prompt tokens)"]
    for it in res.items:
        for field in ("slot", "chunk", "grade_probs"):
            if getattr(it, field) is None:
                problems.append(f"{it.candidate.docid}: no {field}")
        if it.grade_probs is not None and abs(sum(it.grade_probs) - 1.0) > 1e-4:
            problems.append(f"{it.candidate.docid}: grade_probs sum to {sum(it.grade_probs)}")
    return problems


class ForgetsOneSlot:
    """A readout that leaves the slot of its first candidate out."""

    def __init__(self, inner: Reranker) -> None:
        self.inner = inner

    def rank(self, query: Query, candidates: list[Candidate]) -> RankResult:
        res = self.inner.rank(query, candidates)
        first = dataclasses.replace(res.items[0], slot=None)
        return dataclasses.replace(res, items=(first, *res.items[1:]))


def test_a_missing_readout_field_fails_clearly(tiny_model):
    """Neither the contract check nor the runners' scoring path defaults a missing field."""
    grade = build("GradeReranker", tiny_model)
    res = grade.rank(QUERY, make_candidates(5))
    assert readout_problems(res) == []
    stripped = ForgetsOneSlot(grade).rank(QUERY, make_candidates(5))
    assert readout_problems(dataclasses.replace(stripped, cost=None)) == [
        "no cost (forward passes, prompt tokens)",
        "doc-0: no slot",
    ]
    with pytest.raises(
        RerankerContractError, match=r"ForgetsOneSlot broke .* reported a slot for some"
    ):
        score_presentations(ForgetsOneSlot(grade), QUERY, make_candidates(5), [range(5)])


def test_every_builtin_reranker_is_covered():
    assert {"IdentityReranker", "GradeReranker", "PointwiseGradeReranker"} <= set(BUILTIN)


@pytest.mark.parametrize("name", BUILTIN)
class TestRerankerContract:
    def test_shape_identity_and_order(self, name, tiny_model):
        cands = make_candidates()
        res = build(name, tiny_model).rank(QUERY, cands)
        assert isinstance(res, RankResult) and res.query == QUERY
        assert [it.candidate for it in res.items] == cands
        assert [it.input_index for it in res.items] == list(range(len(cands)))
        assert sorted(it.rank for it in res.items) == list(range(1, len(cands) + 1))
        ranked = res.ranked()
        assert all(a.score >= b.score for a, b in itertools.pairwise(ranked))

    def test_scores_finite_and_in_grade_range(self, name, tiny_model):
        scores = np.array(
            [it.score for it in build(name, tiny_model).rank(QUERY, make_candidates()).items]
        )
        assert np.isfinite(scores).all()
        assert (scores >= 0).all() and (scores <= 3).all()

    def test_rerun_is_identical(self, name, tiny_model):
        r = build(name, tiny_model)
        a = [it.score for it in r.rank(QUERY, make_candidates()).items]
        b = [it.score for it in build(name, tiny_model).rank(QUERY, make_candidates()).items]
        assert a == b

    def test_batched_agrees_with_one_at_a_time(self, name, tiny_model):
        cls = RERANKERS.get(name)
        if not {"batch_size", "base"} & {f.name for f in dataclasses.fields(cls.config_cls)}:
            pytest.skip(f"{name} has no batching")
        cands = make_candidates()
        batched = build(name, tiny_model, batch_size=3).rank(QUERY, cands)
        single = build(name, tiny_model, one_at_a_time=True).rank(QUERY, cands)
        diff = max(abs(a.score - b.score) for a, b in zip(batched.items, single.items, strict=True))
        assert diff < 1e-4, f"batched vs one-at-a-time differ by {diff:.2e}"

    def test_pointwise_scores_ignore_candidate_order(self, name, tiny_model):
        r = build(name, tiny_model)
        if r.paradigm not in (Paradigm.POINTWISE,):
            pytest.skip(f"{name} is {r.paradigm.value}, not order-free by construction")
        cands = make_candidates()
        shuffled = cands[::-1]
        a = {it.candidate.docid: it.score for it in r.rank(QUERY, cands).items}
        b = {it.candidate.docid: it.score for it in r.rank(QUERY, shuffled).items}
        assert a == b

    def test_listwise_readout_reports_slot_chunk_grades_and_cost(self, name, tiny_model):
        cls = RERANKERS.get(name)
        if not is_listwise_readout(cls):
            pytest.skip(f"{name} is {cls.paradigm.value}, not a listwise readout")
        r = build(name, tiny_model)
        cands = make_candidates()
        problems = readout_problems(r.rank(QUERY, cands))
        assert not problems, f"{name} must report every readout field: {problems[:5]}"
        perms = [list(range(9)), list(range(9))[::-1]]
        ps = score_presentations(r, QUERY, cands, perms)  # the runners' path, checked once
        assert ps.slots is not None and ps.chunks is not None and ps.grade_probs is not None
        assert (ps.forward_passes > 0).all() and (ps.prompt_tokens > 0).all()
        assert ps.grade_probs.shape[:2] == (2, 9)

    def test_empty_list(self, name, tiny_model):
        res = build(name, tiny_model).rank(QUERY, [])
        assert res.items == ()
