"""The expected-grade rerankers on a tiny random model: chunking, merging, pointwise, options."""

from __future__ import annotations

import itertools
import logging
import random

import numpy as np
import pytest

from presentation_dependence.errors import ConfigError, RegistryError
from presentation_dependence.models.embedded import resolve_model
from presentation_dependence.presentations import (
    BatchRanker,
    draw_presentations,
    score_presentations,
)
from presentation_dependence.readout.prompt import GradeLabelTokenizationError
from presentation_dependence.records import Candidate, Query, RankResult
from presentation_dependence.rerankers import RERANKERS, Paradigm, build_reranker
from presentation_dependence.rerankers.grade import (
    GradeReranker,
    GradeRerankerOptions,
    PointwiseGradeOptions,
    PointwiseGradeReranker,
    Qwen3InstructGradeOptions,
    Qwen3InstructGradeReranker,
    clear_model_cache,
)

logger = logging.getLogger(__name__)

QUERY = Query("q1", "how long is the life cycle of a flea")
WORDS = [
    *("flea", "egg", "larva", "pupa", "host", "cat", "dog"),
    *("year", "day", "week", "life", "cycle", "blood", "jump"),
]


@pytest.fixture(scope="module")
def tiny(tiny_model: str) -> str:
    return tiny_model


def candidates(n: int, seed: int = 0) -> list[Candidate]:
    rng = random.Random(seed)
    return [
        Candidate(f"d{i}", " ".join(rng.choices(WORDS, k=rng.randint(5, 25))), rank=i + 1)
        for i in range(n)
    ]


def opts(tiny: str, **kw: object) -> GradeRerankerOptions:
    kw.setdefault("device", "cpu")
    kw.setdefault("dtype", "float32")
    return GradeRerankerOptions(model_name=tiny, **kw)  # type: ignore[arg-type]


def test_registered_and_cheap_to_construct() -> None:
    for name in (
        "GradeReranker",
        "PointwiseGradeReranker",
        "Qwen3InstructGradeReranker",
        "Gemma4GradeReranker",
        "Granite41GradeReranker",
    ):
        assert name in RERANKERS
    r = build_reranker("Qwen3InstructGradeReranker")
    assert isinstance(r, Qwen3InstructGradeReranker)
    assert r.options.model_name == "Qwen/Qwen3-4B-Instruct-2507"
    assert r.chat_template_kwargs == {"enable_thinking": False}
    assert r._backend is None  # nothing loaded until rank()
    assert GradeReranker.paradigm is Paradigm.LISTWISE_READOUT
    assert PointwiseGradeReranker.paradigm is Paradigm.POINTWISE
    with pytest.raises(TypeError):
        build_reranker("Qwen3InstructGradeReranker", GradeRerankerOptions())
    assert isinstance(Qwen3InstructGradeOptions(), GradeRerankerOptions)


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"chunk_size": 0}, "chunk_size"),
        ({"batch_size": True}, "batch_size"),
        ({"max_prompt_tokens": 8}, "max_prompt_tokens"),
        ({"dtype": "fp16"}, "dtype"),
        ({"device": "tpu"}, "device"),
        ({"template": "pathc_grade"}, "Did you mean 'pathc_grade_v1'"),
        ({"grade_labels": ("0", "1", "2")}, "4 levels"),
        ({"grade_labels": ("0", "1", "1", "3")}, "distinct"),
        ({"one_at_a_time": "yes"}, "one_at_a_time"),
        ({"presentation_batch": 0}, "presentation_batch"),
        ({"presentation_batch": 4, "one_at_a_time": True}, "set one of them"),
    ],
)
def test_options_are_validated(kw: dict[str, object], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        GradeRerankerOptions(**kw)  # type: ignore[arg-type]


def test_options_take_a_yaml_list_and_pointwise_needs_b1() -> None:
    assert GradeRerankerOptions(grade_labels=["0", "1", "2", "3"]).grade_labels == (  # type: ignore[arg-type]
        "0",
        "1",
        "2",
        "3",
    )
    assert PointwiseGradeOptions().chunk_size == 1
    with pytest.raises(ConfigError, match="chunk_size must be 1"):
        PointwiseGradeOptions(chunk_size=20)


def test_unknown_embedded_model_suggests_the_known_one() -> None:
    with pytest.raises(ConfigError, match="Did you mean 'embedded:smollm2-135m-instruct'"):
        resolve_model("embedded:smollm2-135m")
    with pytest.raises(RegistryError):
        build_reranker("GradeRerankr")


def test_chunking_45_at_b20(tiny: str) -> None:
    cands = candidates(45)
    res = GradeReranker(opts(tiny, chunk_size=20)).rank(QUERY, cands)
    assert isinstance(res, RankResult)
    assert [it.candidate.docid for it in res.items] == [c.docid for c in cands]
    chunks = [it.chunk for it in res.items]
    assert [chunks.count(k) for k in range(3)] == [20, 20, 5]
    assert [it.slot for it in res.items] == [*range(1, 21), *range(1, 21), *range(1, 6)]
    assert res.cost.forward_passes == 3
    assert res.details["template"] == "pathc_grade_v1"
    assert res.details["batch_mode"] == "batched"
    assert res.cost.prompt_tokens > 0
    for it in res.items:
        p = np.array(it.grade_probs)
        assert p.shape == (4,) and abs(p.sum() - 1) < 1e-6
        assert 0.0 <= it.score <= 3.0
        assert it.score == pytest.approx(float(p @ np.arange(4)))
    # chunks merge by score; ties fall back to the first-stage rank
    ranked = res.ranked()
    assert all(a.score >= b.score for a, b in itertools.pairwise(ranked))


def test_batched_and_one_at_a_time_agree(tiny: str) -> None:
    cands = candidates(45, seed=1)
    single = GradeReranker(opts(tiny, one_at_a_time=True)).rank(QUERY, cands)
    batched = GradeReranker(opts(tiny, batch_size=3)).rank(QUERY, cands)
    assert single.details["batch_mode"] == "one_at_a_time"
    assert single.cost.forward_passes == 3 and batched.cost.forward_passes == 1
    diff = max(abs(a.score - b.score) for a, b in zip(single.items, batched.items, strict=True))
    logger.info("45 candidates, B=20: batched vs one-at-a-time max |dE[g]| = %.3g", diff)
    assert diff < 1e-4


def test_rerun_is_deterministic(tiny: str) -> None:
    cands = candidates(25, seed=2)
    a = GradeReranker(opts(tiny, chunk_size=10)).rank(QUERY, cands)
    b = GradeReranker(opts(tiny, chunk_size=10)).rank(QUERY, cands)
    assert [x.score for x in a.items] == [y.score for y in b.items]
    assert [x.rank for x in a.items] == [y.rank for y in b.items]


def test_listwise_scores_depend_on_order_pointwise_do_not(tiny: str) -> None:
    cands = candidates(12, seed=3)
    shuffled = cands[::-1]
    pw = PointwiseGradeReranker(PointwiseGradeOptions(model_name=tiny, device="cpu"))
    a = {it.candidate.docid: it.score for it in pw.rank(QUERY, cands).items}
    res = pw.rank(QUERY, shuffled)
    b = {it.candidate.docid: it.score for it in res.items}
    assert a == b  # bit for bit: each prompt holds one candidate
    assert res.cost.forward_passes == 12
    assert {it.slot for it in res.items} == {1}
    lw = GradeReranker(opts(tiny, chunk_size=12))
    c = {it.candidate.docid: it.score for it in lw.rank(QUERY, cands).items}
    d = {it.candidate.docid: it.score for it in lw.rank(QUERY, shuffled).items}
    assert c != d  # a listwise prompt sees its neighbours and its slot


def test_models_are_shared_and_described(tiny: str) -> None:
    clear_model_cache()
    r1, r2 = GradeReranker(opts(tiny)), GradeReranker(opts(tiny, chunk_size=5))
    r1.rank(QUERY, candidates(3))
    r2.rank(QUERY, candidates(3))
    assert r1._backend is r2._backend
    info = r1.describe()
    for key in ("model_name", "resolved_path", "revision", "dtype", "device", "batch_mode"):
        assert key in info
    assert info["template"] == "pathc_grade_v1" and info["dtype"] == "float32"
    assert info["torch"] and info["transformers"] and info["model_source"] == "local"


def test_empty_list_and_bad_labels(tiny: str) -> None:
    res = GradeReranker(opts(tiny)).rank(QUERY, [])
    assert res.items == () and res.cost.forward_passes == 0
    bad = GradeReranker(opts(tiny, grade_labels=("10", "11", "12", "13")))
    with pytest.raises(GradeLabelTokenizationError, match="'10'"):
        bad.rank(QUERY, candidates(3))


# -- placement ------------------------------------------------------------------------------


def test_round_robin_placement_45_at_b20(tiny: str) -> None:
    cands = candidates(45)
    res = GradeReranker(opts(tiny, chunk_size=20, placement="round_robin")).rank(QUERY, cands)
    assert [it.candidate.docid for it in res.items] == [c.docid for c in cands]
    assert res.details["chunks"] == 3 and res.cost.forward_passes == 3
    chunks = [it.chunk for it in res.items]
    assert chunks == [i % 3 for i in range(45)]
    assert [chunks.count(k) for k in range(3)] == [15, 15, 15]
    assert [it.slot for it in res.items] == [i // 3 + 1 for i in range(45)]
    # each chunk is the prompt that GradeReranker builds for its members in input order
    one = GradeReranker(opts(tiny, chunk_size=15))
    for k in range(3):
        sub = one.rank(QUERY, cands[k::3])
        assert [it.score for it in sub.items] == pytest.approx(
            [it.score for it in res.items[k::3]], abs=1e-9
        )


def test_round_robin_chunk_sizes_never_exceed_b() -> None:
    r = GradeReranker(GradeRerankerOptions(chunk_size=20, placement="round_robin"))
    for n in (1, 19, 20, 21, 41, 45, 100):
        groups = r._chunk_indices(n)
        assert len(groups) == -(-n // 20)
        assert sorted(i for g in groups for i in g) == list(range(n))
        assert max(len(g) for g in groups) <= 20
        assert max(len(g) for g in groups) - min(len(g) for g in groups) <= 1


def test_sequential_placement_is_the_default_and_unchanged(tiny: str) -> None:
    assert GradeRerankerOptions().placement == "sequential"
    cands = candidates(45)
    default = GradeReranker(opts(tiny, chunk_size=20)).rank(QUERY, cands)
    seq = GradeReranker(opts(tiny, chunk_size=20, placement="sequential")).rank(QUERY, cands)
    assert [it.score for it in default.items] == [it.score for it in seq.items]
    assert [it.chunk for it in seq.items] == [i // 20 for i in range(45)]
    assert [it.slot for it in seq.items] == [i % 20 + 1 for i in range(45)]
    with pytest.raises(ConfigError, match="placement"):
        GradeRerankerOptions(placement="interleaved")  # type: ignore[arg-type]


def test_presentations_batched_by_length_score_as_one_a_pass(tiny: str) -> None:
    """issue 39: the shuffles of one list share passes where their prompts have one length,
    unpadded, and every score, slot and grade distribution is the one-a-pass value, bit for bit
    (CPU, float32); prompts of other lengths run alone; the total cost is unchanged in tokens."""
    cands = candidates(20, seed=3)  # one chunk a presentation: mostly one token length
    perms = draw_presentations("random_shuffle", len(cands), 7, 0, QUERY.qid)
    alone = score_presentations(GradeReranker(opts(tiny)), QUERY, cands, perms)
    batched_rr = GradeReranker(opts(tiny, presentation_batch=4))
    assert isinstance(batched_rr, BatchRanker)
    together = score_presentations(batched_rr, QUERY, cands, perms)
    assert np.array_equal(alone.scores, together.scores)
    assert np.array_equal(alone.grade_probs, together.grade_probs)
    assert np.array_equal(alone.slots, together.slots)
    assert np.array_equal(alone.prompt_tokens, together.prompt_tokens)
    lengths = [
        len(p.input_ids)
        for perm in perms
        for p in batched_rr._prompts(QUERY, [cands[i] for i in perm])[1]
    ]
    shared = sum(-(-lengths.count(n) // 4) for n in set(lengths))  # passes with max 4 a pass
    assert together.forward_passes.sum() == shared < alone.forward_passes.sum() == len(lengths)
