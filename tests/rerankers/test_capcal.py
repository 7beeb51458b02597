"""CapCalGradeReranker on the tiny random model: content-free calibration of the readout."""

from __future__ import annotations

import random

import numpy as np
import pytest

from presentation_dependence.errors import ConfigError
from presentation_dependence.readout.speed import cxx_compiler
from presentation_dependence.records import Candidate, Query
from presentation_dependence.rerankers import RERANKERS, Paradigm
from presentation_dependence.rerankers.base import RerankerConfig
from presentation_dependence.rerankers.capcal import (
    CapCalGradeOptions,
    CapCalGradeReranker,
    calibrate,
)
from presentation_dependence.rerankers.grade import GradeReranker, GradeRerankerOptions

QUERY = Query("q1", "how long is the life cycle of a flea")
WORDS = ["flea", "egg", "larva", "pupa", "host", "cat", "dog", "year", "day", "blood", "jump"]


def candidates(n: int, seed: int = 0) -> list[Candidate]:
    rng = random.Random(seed)
    return [
        Candidate(f"d{i}", " ".join(rng.choices(WORDS, k=rng.randint(5, 25))), rank=i + 1)
        for i in range(n)
    ]


def capcal(tiny: str, **kw: object) -> CapCalGradeReranker:
    kw.setdefault("device", "cpu")
    kw.setdefault("dtype", "float32")
    return CapCalGradeReranker(CapCalGradeOptions(model_name=tiny, **kw))  # type: ignore[arg-type]


def grade(tiny: str, **kw: object) -> GradeReranker:
    return GradeReranker(
        GradeRerankerOptions(model_name=tiny, device="cpu", dtype="float32", **kw)  # type: ignore[arg-type]
    )


def test_registered_as_a_mitigation_and_built_from_a_block() -> None:
    assert RERANKERS.get("CapCalGradeReranker") is CapCalGradeReranker
    assert CapCalGradeReranker.paradigm is Paradigm.MITIGATION
    cfg = RerankerConfig.from_raw(
        {"reranker_class": "CapCalGradeReranker", "alpha": 1, "method": "divide"}
    )
    assert isinstance(cfg.options, CapCalGradeOptions)
    assert cfg.options.alpha == 1.0 and isinstance(cfg.options.alpha, float)
    assert cfg.to_plain()["placeholder"] == "N/A"


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"alpha": -0.1}, "alpha"),
        ({"alpha": float("nan")}, "alpha"),
        ({"alpha": True}, "alpha"),
        ({"method": "subtract"}, "method"),
        ({"placeholder": 3}, "placeholder"),
        ({"chunk_size": 0}, "chunk_size"),  # the readout's own checks still run
    ],
)
def test_options_are_validated(kw: dict[str, object], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        CapCalGradeOptions(**kw)  # type: ignore[arg-type]


def test_capcal_form_by_hand() -> None:
    p = np.array([[0.1, 0.6, 0.2, 0.1]])
    p_cf = np.array([[0.1, 0.7, 0.1, 0.1]])  # the prior pulls towards grade 1
    out = calibrate(p, p_cf, alpha=1.0, method="capcal")
    # P - (P_cf - 1/4) = [0.25, 0.15, 0.35, 0.25]: already sums to 1, nothing clipped
    np.testing.assert_allclose(out, [[0.25, 0.15, 0.35, 0.25]], atol=1e-12)
    strong = calibrate(p, p_cf, alpha=2.0, method="capcal")
    # [0.4, -0.3, 0.5, 0.4] -> clip -> [0.4, 0, 0.5, 0.4] / 1.3
    np.testing.assert_allclose(strong, [[0.4 / 1.3, 0.0, 0.5 / 1.3, 0.4 / 1.3]], atol=1e-12)
    np.testing.assert_allclose(calibrate(p, p_cf, alpha=0.0), p, atol=1e-15)


def test_divide_method_by_hand() -> None:
    p = np.array([[0.1, 0.6, 0.2, 0.1], [0.25, 0.25, 0.25, 0.25]])
    p_cf = np.array([[0.2, 0.4, 0.2, 0.2], [0.5, 0.25, 0.125, 0.125]])
    out = calibrate(p, p_cf, alpha=1.0, method="divide")
    w0 = np.array([0.5, 1.5, 1.0, 0.5])  # P / P_cf
    w1 = np.array([0.5, 1.0, 2.0, 2.0])
    np.testing.assert_allclose(out, [w0 / w0.sum(), w1 / w1.sum()], atol=1e-12)
    # a uniform prior changes nothing; alpha = 0 changes nothing
    np.testing.assert_allclose(calibrate(p, np.full_like(p, 0.25), alpha=1.0, method="divide"), p)
    np.testing.assert_allclose(calibrate(p, p_cf, alpha=0.0, method="divide"), p, atol=1e-15)
    half = calibrate(p[:1], p_cf[:1], alpha=0.5, method="divide")
    w = p[0] / np.sqrt(p_cf[0])
    np.testing.assert_allclose(half[0], w / w.sum(), atol=1e-12)


def test_alpha_zero_gives_the_readout_scores(tiny_model: str) -> None:
    cands = candidates(9)
    base = grade(tiny_model, chunk_size=4).rank(QUERY, cands)
    for method in ("capcal", "divide"):
        res = capcal(tiny_model, chunk_size=4, alpha=0.0, method=method).rank(QUERY, cands)
        assert [it.score for it in res.items] == pytest.approx(
            [it.score for it in base.items], abs=1e-12
        )
        for a, b in zip(res.items, base.items, strict=True):
            assert a.details["grade_probs_raw"] == list(b.grade_probs)
            assert (a.slot, a.chunk) == (
                b.slot,
                b.chunk,
            )


def test_calibrated_distributions_and_cost(tiny_model: str) -> None:
    cands = candidates(6, seed=1)
    base = grade(tiny_model, chunk_size=6).rank(QUERY, cands)
    res = capcal(tiny_model, chunk_size=6).rank(QUERY, cands)
    # one chunk: one real pass and one content-free pass
    assert base.cost.forward_passes == 1
    assert res.cost.forward_passes == 2 * base.cost.forward_passes
    assert res.details["content_free_passes"] == 1
    assert res.cost.prompt_tokens == (
        base.cost.prompt_tokens + res.details["content_free_prompt_tokens"]
    )
    assert res.details["calibration"] == {"method": "capcal", "alpha": 1.0, "placeholder": "N/A"}
    values = np.arange(4)
    moved = 0.0
    for it, b in zip(res.items, base.items, strict=True):
        p = np.array(it.grade_probs)
        raw = np.array(it.details["grade_probs_raw"])
        cf = np.array(it.details["grade_probs_content_free"])
        assert abs(p.sum() - 1) < 1e-12 and (p >= 0).all()
        assert abs(cf.sum() - 1) < 1e-6
        assert raw.tolist() == list(b.grade_probs)
        assert it.score == pytest.approx(float(p @ values), abs=1e-12)
        np.testing.assert_allclose(p, calibrate(raw[None], cf[None], alpha=1.0)[0], atol=1e-12)
        moved = max(moved, abs(it.score - b.score))
    assert moved > 1e-3  # the calibration does something on the random model


def test_content_free_pass_is_cached_per_chunk_length(tiny_model: str) -> None:
    # 9 candidates at B=4: chunks of 4, 4, 1 -> 3 real passes + 2 content-free (lengths 4, 1)
    res = capcal(tiny_model, chunk_size=4).rank(QUERY, candidates(9))
    assert res.details["chunks"] == 3
    assert res.details["content_free_passes"] == 2
    assert res.cost.forward_passes == 5
    cf = [it.details["grade_probs_content_free"] for it in res.items]
    assert cf[0:4] == cf[4:8]  # same length, same query: the same prior, slot by slot
    assert cf[0] != cf[1]  # ... which differs between slots
    # round robin, 9 at B=4: 3 chunks of 3 -> one content-free pass
    rr = capcal(tiny_model, chunk_size=4, placement="round_robin").rank(QUERY, candidates(9))
    assert rr.details["content_free_passes"] == 1 and rr.cost.forward_passes == 4
    assert [it.chunk for it in rr.items] == [i % 3 for i in range(9)]


def test_the_placeholder_is_what_the_content_free_pass_sees(tiny_model: str) -> None:
    cands = candidates(5, seed=2)
    a = capcal(tiny_model, chunk_size=5).rank(QUERY, cands)
    b = capcal(tiny_model, chunk_size=5, placeholder="This is a placeholder passage.").rank(
        QUERY, cands
    )
    assert [it.details["grade_probs_raw"] for it in a.items] == [
        it.details["grade_probs_raw"] for it in b.items
    ]
    assert [it.details["grade_probs_content_free"] for it in a.items] != [
        it.details["grade_probs_content_free"] for it in b.items
    ]
    assert capcal(tiny_model).rank(QUERY, []).cost.forward_passes == 0


@pytest.mark.skipif(cxx_compiler() is None, reason="torch.compile on CPU needs a C++ compiler")
def test_compile_reaches_the_calibrated_passes(tiny_model: str) -> None:
    # CapCal once ignored `compile`: its passes ran eager while provenance said compiled, and
    # its raw distributions differed from the compiled base readout's by ~1e-6.
    cands = candidates(9)
    base = grade(tiny_model, chunk_size=4, compile=True).rank(QUERY, cands)
    wrapped = capcal(tiny_model, chunk_size=4, alpha=0.0, compile=True)
    res = wrapped.rank(QUERY, cands)
    assert [it.details["grade_probs_raw"] for it in res.items] == [
        list(it.grade_probs) for it in base.items
    ]
    backend, _ = wrapped._ensure_loaded()
    assert backend.compiler.layers and not backend.compiler.enabled  # on for the calls only
