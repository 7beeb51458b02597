"""Readout throughput benchmark: listwise B=20 against pointwise, and achieved FLOP/s.

Measured in one process on the same model and documents:

* documents scored per second by the listwise readout (``GradeReranker``, B=20) and by the
  pointwise readout (``PointwiseGradeReranker``, B=1), end to end through ``rank()``, and their
  ratio (goal: listwise >= 1.5x pointwise);
* the achieved forward FLOP/s of the listwise readout, ``2 * N * T / t`` with N the
  non-embedding parameters, T the prompt tokens and t the forward time (Kaplan et al. 2020's
  forward cost; attention's own FLOPs are not counted), against a dense matmul's FLOP/s measured
  in the same run and dtype (goal: >= 60%).
"""

from __future__ import annotations

import logging
import statistics
import time
from collections.abc import Sequence
from typing import Any

import torch

from presentation_dependence.records import RerankRequest
from presentation_dependence.rerankers.grade import (
    GradeReranker,
    GradeRerankerOptions,
    PointwiseGradeOptions,
    PointwiseGradeReranker,
)

__all__ = ["matmul_flops", "non_embedding_parameters", "rank_vs_forward", "run_readout_benchmark"]

log = logging.getLogger(__name__)


def matmul_flops(dtype: torch.dtype, n: int = 1024, repeats: int = 20) -> float:
    """Dense ``n x n @ n x n`` matmul rate in FLOP/s (2n³ per product), best of ``repeats``."""
    a = torch.randn(n, n, generator=torch.Generator().manual_seed(0)).to(dtype)
    b = torch.randn(n, n, generator=torch.Generator().manual_seed(1)).to(dtype)
    for _ in range(3):
        torch.mm(a, b)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        torch.mm(a, b)
        best = min(best, time.perf_counter() - t0)
    return 2 * n**3 / best


def non_embedding_parameters(model: torch.nn.Module) -> int:
    """Parameters outside the input embedding and the (tied or not) output head."""
    skip: set[int] = set()
    get_in = getattr(model, "get_input_embeddings", None)
    get_out = getattr(model, "get_output_embeddings", None)
    for mod in (get_in() if get_in else None, get_out() if get_out else None):
        if isinstance(mod, torch.nn.Module):
            skip.update(id(p) for p in mod.parameters())
    seen: set[int] = set()
    total = 0
    for p in model.parameters():
        if id(p) in skip or id(p) in seen:
            continue
        seen.add(id(p))
        total += p.numel()
    return total


def _time_rank(reranker: GradeReranker, requests: Sequence[RerankRequest]) -> dict[str, Any]:
    seconds, docs, tokens, passes = [], 0, 0, 0
    scores: list[float] = []
    for req in requests:
        t0 = time.perf_counter()
        res = reranker.rank(req.query, req.candidates)
        seconds.append(time.perf_counter() - t0)
        docs += len(req.candidates)
        if res.cost is None:
            raise RuntimeError(f"{type(reranker).__name__} reported no cost; the bench needs it")
        tokens += res.cost.prompt_tokens
        passes += res.cost.forward_passes
        scores.extend(it.score for it in res.items)
    total = sum(seconds)
    return {
        "seconds": total,
        "docs": docs,
        "docs_per_second": docs / total,
        "prompt_tokens": tokens,
        "forward_passes": passes,
        "per_query_seconds_median": statistics.median(seconds),
        "scores": scores,
    }


def _forward_rate(reranker: GradeReranker, requests: Sequence[RerankRequest]) -> dict[str, Any]:
    """Forward-only time of the listwise prompts (prompt building excluded)."""
    backend, builder = reranker._ensure_loaded()
    b = reranker.options.chunk_size
    prompts = [
        builder.build(r.query.text, [c.text for c in r.candidates[i : i + b]])
        for r in requests
        for i in range(0, len(r.candidates), b)
    ]
    compiled = reranker._compiled(backend)  # as rank() runs them (readout/speed.py)
    _, stats = backend.grade_probs(
        prompts, builder.grade_token_ids, one_at_a_time=True, compile=compiled
    )
    # the numerics pair, both uncompiled: a padded batch would compile a graph of its own
    single, _ = backend.grade_probs(prompts, builder.grade_token_ids, one_at_a_time=True)
    batched, _ = backend.grade_probs(prompts, builder.grade_token_ids, batch_size=len(prompts))
    values = torch.arange(single[0].shape[1], dtype=torch.float64).numpy()
    batch_diff = max(
        float(abs(s @ values - b @ values).max()) for s, b in zip(single, batched, strict=True)
    )
    n = non_embedding_parameters(backend.model)
    cfg = backend.model.config
    # Causal attention's own matmuls (QK^T and AV over the lower triangle): 2·L·d·T² per prompt.
    attn = sum(2 * cfg.num_hidden_layers * cfg.hidden_size * len(p.input_ids) ** 2 for p in prompts)
    return {
        "compiled": compiled,
        "attention_flops": attn,
        "achieved_flops_with_attention": (2 * n * stats.prompt_tokens + attn) / stats.seconds,
        "max_score_diff_batched_vs_one_at_a_time": batch_diff,
        "batched_prompts_per_pass": len(prompts),
        "non_embedding_parameters": n,
        "forward_seconds": stats.seconds,
        "tokens": stats.prompt_tokens,
        "achieved_flops": 2 * n * stats.prompt_tokens / stats.seconds,
    }


def rank_vs_forward(
    reranker: GradeReranker, requests: Sequence[RerankRequest], reps: int = 3
) -> dict[str, Any]:
    """``rank()`` end to end against the forward passes alone on the same prompts, alternated
    ``reps`` times in one process (issue 39: is there overhead outside the forward pass?)."""
    backend, builder = reranker._ensure_loaded()
    b = reranker.options.chunk_size
    rank_s, forward_s = [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        for r in requests:
            reranker.rank(r.query, r.candidates)
        rank_s.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        prompts = [
            builder.build(r.query.text, [c.text for c in r.candidates[i : i + b]])
            for r in requests
            for i in range(0, len(r.candidates), b)
        ]
        build = time.perf_counter() - t0
        _, stats = backend.grade_probs(
            prompts,
            builder.grade_token_ids,
            one_at_a_time=True,
            compile=reranker._compiled(backend),
        )
        forward_s.append(stats.seconds)
    return {
        "reps": reps,
        "rank_seconds": rank_s,
        "forward_seconds": forward_s,
        "prompt_build_seconds": build,
        "rank_over_forward_best": min(rank_s) / min(forward_s),
    }


def run_readout_benchmark(
    requests: Sequence[RerankRequest],
    *,
    model_name: str,
    dtypes: Sequence[str] = ("float32", "bfloat16"),
    chunk_size: int = 20,
    max_passage_chars: int = 1200,
) -> dict[str, Any]:
    """Run every measurement for each dtype; return a JSON-ready dict."""
    out: dict[str, Any] = {
        "model_name": model_name,
        "threads": torch.get_num_threads(),
        "queries": len(requests),
        "docs": sum(len(r.candidates) for r in requests),
        "chunk_size": chunk_size,
        "by_dtype": {},
    }
    for dtype in dtypes:
        out["by_dtype"][dtype] = _dtype_benchmark(
            requests, model_name, dtype, chunk_size, max_passage_chars
        )
    if {"float32", "bfloat16"} <= set(out["by_dtype"]):
        a = out["by_dtype"]["float32"]["listwise"]["scores"]
        b = out["by_dtype"]["bfloat16"]["listwise"]["scores"]
        out["max_score_diff_bfloat16_vs_float32"] = max(
            abs(x - y) for x, y in zip(a, b, strict=True)
        )
    return out


def _dtype_benchmark(
    requests: Sequence[RerankRequest],
    model_name: str,
    dtype: str,
    chunk_size: int,
    max_passage_chars: int,
) -> dict[str, Any]:
    """One dtype's measurements: dense matmul, listwise against pointwise, forward FLOP/s."""
    listwise = GradeReranker(
        GradeRerankerOptions(
            model_name=model_name,
            dtype=dtype,
            max_passage_chars=max_passage_chars,
            chunk_size=chunk_size,
        )
    )
    pointwise = PointwiseGradeReranker(
        PointwiseGradeOptions(
            model_name=model_name, dtype=dtype, max_passage_chars=max_passage_chars
        )
    )
    log.info("[%s] warm-up", dtype)
    _time_rank(listwise, requests[:1])
    _time_rank(pointwise, requests[:1])
    tdtype = getattr(torch, dtype)
    log.info("[%s] dense matmul", dtype)
    mm = matmul_flops(tdtype)
    log.info("[%s] listwise B=%d", dtype, chunk_size)
    lw = _time_rank(listwise, requests)
    log.info("[%s] pointwise B=1", dtype)
    pw = _time_rank(pointwise, requests)
    log.info("[%s] forward-only FLOP/s", dtype)
    fw = _forward_rate(listwise, requests)
    log.info("[%s] rank() vs forward alone, alternated", dtype)
    overhead = rank_vs_forward(listwise, requests)
    result = {
        "rank_vs_forward": overhead,
        "matmul_flops": mm,
        "listwise": lw,
        "pointwise": pw,
        "listwise_over_pointwise_docs_per_second": lw["docs_per_second"] / pw["docs_per_second"],
        "forward": fw,
        "achieved_over_matmul": fw["achieved_flops"] / mm,
    }
    log.info(
        "[%s] listwise/pointwise = %.2fx, achieved/matmul = %.0f%%",
        dtype,
        result["listwise_over_pointwise_docs_per_second"],
        100 * result["achieved_over_matmul"],
    )
    return result
