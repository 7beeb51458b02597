"""Generative listwise throughput: documents per second of RankGPT-style sliding windows.

Measured end to end through :meth:`GenerativeListwiseReranker.rank` on the given requests (the
same model and documents as the readout benchmark), after one warm-up query. With the readout's
documents per second from the same run, it reports ``readout_over_generative`` against the goal
of the readout being at least 3x faster (issue 7).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

from presentation_dependence.records import RerankRequest
from presentation_dependence.rerankers.generative_listwise import (
    GenerativeListwiseOptions,
    GenerativeListwiseReranker,
)

__all__ = ["READOUT_SPEEDUP_GOAL", "generative_listwise_rate"]

log = logging.getLogger(__name__)

READOUT_SPEEDUP_GOAL = 3.0


def generative_listwise_rate(
    requests: Sequence[RerankRequest],
    *,
    model_name: str,
    device: str = "cpu",
    dtype: str = "auto",
    window_size: int = 20,
    stride: int = 10,
    num_threads: int | None = None,
    readout_docs_per_second: float | None = None,
    warmup: bool = True,
) -> dict[str, Any]:
    """Documents per second of the generative listwise reranker on ``requests``.

    ``readout_docs_per_second`` (the listwise readout's rate measured in the same run) adds
    ``readout_over_generative`` and ``goal_met`` (ratio >= 3).
    """
    if not requests:
        raise ValueError("generative_listwise_rate needs at least one request")
    reranker = GenerativeListwiseReranker(
        GenerativeListwiseOptions(
            model_name=model_name,
            device=device,
            dtype=dtype,
            window_size=window_size,
            stride=stride,
            num_threads=num_threads,
        )
    )
    if warmup:
        first = requests[0]
        reranker.rank(first.query, first.candidates[: min(len(first.candidates), 4)])
    counts, statuses = _timed_rate(reranker, requests)
    out: dict[str, Any] = {"model_name": model_name, **counts}
    out.update(window_size=window_size, stride=stride, response_statuses=statuses)
    if readout_docs_per_second is not None:
        ratio = readout_docs_per_second / out["generative_listwise_docs_per_second"]
        out.update(
            readout_docs_per_second=readout_docs_per_second,
            readout_over_generative=ratio,
            goal_readout_over_generative=READOUT_SPEEDUP_GOAL,
            goal_met=ratio >= READOUT_SPEEDUP_GOAL,
        )
    log.info(
        "generative listwise: %.2f docs/s (%d windows, %d generated tokens)",
        out["generative_listwise_docs_per_second"],
        out["windows"],
        out["generated_tokens"],
    )
    return out


def _timed_rate(
    reranker: GenerativeListwiseReranker, requests: Sequence[RerankRequest]
) -> tuple[dict[str, Any], dict[str, int]]:
    """Rank every request, timed: (queries, documents, seconds, documents per second, windows,
    generated tokens), and the count of each parse status of the responses."""
    docs = windows = generated = 0
    statuses: dict[str, int] = {}
    t0 = time.perf_counter()
    for req in requests:
        res = reranker.rank(req.query, req.candidates)
        docs += len(req.candidates)
        windows += int(res.details["windows"])
        generated += int(res.details["generated_tokens"])
        for k, v in res.details.get("statuses", {}).items():
            statuses[k] = statuses.get(k, 0) + int(v)
    seconds = time.perf_counter() - t0
    counts = {
        "queries": len(requests),
        "documents": docs,
        "seconds": seconds,
        "generative_listwise_docs_per_second": docs / seconds if seconds > 0 else float("inf"),
        "windows": windows,
        "generated_tokens": generated,
    }
    return counts, statuses
