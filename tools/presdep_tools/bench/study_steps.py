"""End-to-end cost of a study step (issue 39): the PSI of one query as the studies run it.

One DL19 query (BM25 top-20, B = 20, the interleaved readout, passages cut to 300 characters,
one thread: ``configs/experiments/psi-dl19-interleaved.yaml``) scored under M seeded shuffles
plus the same-order null through :func:`~presentation_dependence.presentations.
score_presentations`, twice in one process: one prompt a pass (today's study path) and with
``presentation_batch`` (prompts of one token length share a pass, unpadded). Reported: wall and
CPU seconds, prompt tokens, forward passes, and the largest score difference between the two
(0 where the batched pass reproduces one a pass bit for bit).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import torch

from presentation_dependence.presentations import draw_presentations, score_presentations
from presentation_dependence.records import RerankRequest
from presentation_dependence.rerankers.grade import GradeReranker, GradeRerankerOptions

__all__ = ["psi_step_benchmark"]


def _timed(reranker: GradeReranker, req: RerankRequest, perms: np.ndarray) -> dict[str, Any]:
    wall, cpu = time.perf_counter(), time.process_time()
    ps = score_presentations(reranker, req.query, req.candidates, perms)
    return {
        "wall_seconds": time.perf_counter() - wall,
        "cpu_seconds": time.process_time() - cpu,
        "forward_passes": int(ps.forward_passes.sum()),
        "prompt_tokens": int(ps.prompt_tokens.sum()),
        "scores": ps.scores,
    }


def psi_step_benchmark(
    requests: Sequence[RerankRequest],
    *,
    model_name: str,
    m: int = 10,
    null_repeats: int = 2,
    presentation_batch: int = 11,
    dtype: str = "auto",
    threads: int = 1,
    max_passage_chars: int = 300,
) -> dict[str, Any]:
    """The PSI step of the first query of ``requests``, one a pass and batched (module doc)."""
    req = requests[0]
    n = len(req.candidates)
    perms = np.concatenate(
        [
            draw_presentations("random_shuffle", n, m, 0, req.query.qid),
            np.tile(np.arange(n), (null_repeats + 1, 1)),  # the given order and its repeats
        ]
    )
    opts = GradeRerankerOptions(
        model_name=model_name,
        template="interleaved_grade_v1",
        chunk_size=20,
        max_passage_chars=max_passage_chars,
        dtype=dtype,
        num_threads=threads,
    )
    alone = GradeReranker(opts)
    batched = GradeReranker(replace(opts, presentation_batch=presentation_batch))
    before = torch.get_num_threads()
    try:
        _timed(alone, req, perms[:1])  # load and warm both (one model in memory each)
        _timed(batched, req, perms[:2])
        one, many = _timed(alone, req, perms), _timed(batched, req, perms)
    finally:
        torch.set_num_threads(before)
    diff = float(np.max(np.abs(one.pop("scores") - many.pop("scores"))))
    return {
        "qid": req.query.qid,
        "presentations": len(perms),
        "shuffles": m,
        "null_repeats": null_repeats,
        "threads": threads,
        "dtype": str(alone._ensure_loaded()[0].dtype).removeprefix("torch."),
        "presentation_batch": presentation_batch,
        "one_a_pass": one,
        "batched": many,
        "wall_ratio": one["wall_seconds"] / many["wall_seconds"],
        "cpu_ratio": one["cpu_seconds"] / many["cpu_seconds"],
        "max_abs_score_diff": diff,
    }
