"""End-to-end cost of the studies' two steps (issue 39): today's path against the levers, one run.

* **PSI step**: one DL19 query (BM25 top-20, B = 20, the interleaved readout, passages cut to
  300 characters, one thread: ``configs/experiments/psi-dl19-interleaved.yaml``) scored under M
  seeded shuffles plus the same-order null through :func:`~presentation_dependence.
  presentations.score_presentations`, once per path of :data:`PSI_PATHS`: today's (float32,
  eager, one prompt a pass, as the content study ran), bfloat16, bfloat16 through compiled
  decoder layers, and bfloat16 with equal-length presentations sharing a pass. Each path is its
  own reranker, warmed on the first presentations (a compiled path compiles there) before the
  timed pass. Per path: wall and CPU seconds, where the wall time went (:func:`stage_clock`:
  prompt building, forward passes with the readout, the rest), forward passes, prompt tokens,
  its speed-up in CPU seconds over today's (goal: at least :data:`GOAL_SPEEDUP`, "at most
  half"), and the largest score difference from today's scores.
* **Training step**: one OC-SFT step at the studies' geometry (one NovelEval query, 10
  candidates cut at 300 characters, LoRA r 16, two views, one thread) per path of
  :data:`TRAIN_PATHS`, each in a fresh process under the studies' allocator settings
  (:func:`~presdep_tools.bench.training.isolated_step`): float32 eager (today) against
  bfloat16 compiled; the timed steps' user CPU seconds per step.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import numpy as np
import torch

from presdep_tools.bench.training import StepSettings, isolated_step, measure_step
from presentation_dependence.presentations import draw_presentations, score_presentations
from presentation_dependence.provenance import cpu_info, cpu_label, git_state
from presentation_dependence.records import RerankRequest
from presentation_dependence.rerankers.grade import GradeReranker, GradeRerankerOptions
from presentation_dependence.studies.sequencer import ALLOCATOR_ENV

__all__ = [
    "GOAL_SPEEDUP",
    "PSI_PATHS",
    "TRAIN_PATHS",
    "psi_step_benchmark",
    "stage_clock",
    "study_steps_probe",
    "training_step_paths",
]

GOAL_SPEEDUP = 2.0
# path name -> the reranker options it changes; the first is today's path, the reference
PSI_PATHS: dict[str, dict[str, Any]] = {
    "float32, eager, one a pass (today)": {"dtype": "float32", "compile": False},
    "bfloat16, eager, one a pass": {"dtype": "bfloat16", "compile": False},
    "bfloat16, compiled, one a pass (the defaults on AMX)": {"dtype": "bfloat16", "compile": True},
    "bfloat16, compiled, presentation_batch 11": {
        "dtype": "bfloat16",
        "compile": True,
        "presentation_batch": 11,
    },
}
# path name -> (dtype, compiled); the first is today's
TRAIN_PATHS: dict[str, tuple[str, bool]] = {
    "float32, eager (today)": ("float32", False),
    "bfloat16, compiled": ("bfloat16", True),
}


# where a PSI step's wall time goes (stage_clock); the rest is everything else
STAGES = ("prompts", "forward")


@contextmanager
def stage_clock(reranker: GradeReranker) -> Iterator[dict[str, float]]:
    """Wall seconds spent, while the block runs, in the reranker's prompt building (template,
    passage cuts, chat template, tokenisation: ``_prompts``) and in its backend's forward passes
    with the readout at the slots (``grade_probs``, ``grade_probs_equal_lengths``); the methods
    are timed through instance attributes, removed afterwards."""
    backend, _ = reranker._ensure_loaded()
    spent = dict.fromkeys(STAGES, 0.0)
    depth = dict.fromkeys(STAGES, 0)  # one method of a stage may call another: time the outer
    timed: list[tuple[object, str, str]] = [(reranker, "_prompts", "prompts")]
    timed += [(backend, name, "forward") for name in ("grade_probs", "grade_probs_equal_lengths")]

    def clocked(inner: Callable[..., Any], stage: str) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            depth[stage] += 1
            try:
                return inner(*args, **kwargs)
            finally:
                depth[stage] -= 1
                if not depth[stage]:
                    spent[stage] += time.perf_counter() - t0

        return call

    for obj, name, stage in timed:
        setattr(obj, name, clocked(getattr(obj, name), stage))
    try:
        yield spent
    finally:
        for obj, name, _ in timed:
            delattr(obj, name)


def _timed(reranker: GradeReranker, req: RerankRequest, perms: np.ndarray) -> dict[str, Any]:
    with stage_clock(reranker) as spent:
        wall, cpu = time.perf_counter(), time.process_time()
        ps = score_presentations(reranker, req.query, req.candidates, perms)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    stages = {f"{k}_seconds": v for k, v in spent.items()}
    stages["rest_seconds"] = wall - sum(spent.values())  # drawing, realigning, records
    return {
        "wall_seconds": wall,
        "cpu_seconds": cpu,
        "stages": stages,
        "forward_passes": int(ps.forward_passes.sum()),
        "prompt_tokens": int(ps.prompt_tokens.sum()),
        "scores": ps.scores,
    }


def _psi_path(
    base: GradeRerankerOptions, change: Mapping[str, Any], req: RerankRequest, perms: np.ndarray
) -> dict[str, Any]:
    reranker = GradeReranker(replace(base, **change))
    _timed(reranker, req, perms[:2])  # load, warm (and compile) before the timed pass
    out = _timed(reranker, req, perms)
    out["dtype"] = str(reranker._ensure_loaded()[0].dtype).removeprefix("torch.")
    out["options"] = dict(change)
    return out


def psi_step_benchmark(
    requests: Sequence[RerankRequest],
    *,
    model_name: str,
    m: int = 10,
    null_repeats: int = 2,
    paths: Mapping[str, Mapping[str, Any]] | None = None,
    threads: int = 1,
    max_passage_chars: int = 300,
) -> dict[str, Any]:
    """The PSI step of the first query of ``requests`` along each path (module docstring)."""
    paths = PSI_PATHS if paths is None else paths
    req = requests[0]
    n = len(req.candidates)
    perms = np.concatenate(
        [
            draw_presentations("random_shuffle", n, m, 0, req.query.qid),
            np.tile(np.arange(n), (null_repeats + 1, 1)),  # the given order and its repeats
        ]
    )
    base = GradeRerankerOptions(
        model_name=model_name,
        template="interleaved_grade_v1",
        chunk_size=20,
        max_passage_chars=max_passage_chars,
        num_threads=threads,
    )
    before = torch.get_num_threads()
    try:
        runs = {name: _psi_path(base, change, req, perms) for name, change in paths.items()}
    finally:
        torch.set_num_threads(before)
    ref = next(iter(runs.values()))
    for run in runs.values():
        run["cpu_speedup"] = ref["cpu_seconds"] / run["cpu_seconds"]
        run["max_abs_score_diff"] = float(np.max(np.abs(run["scores"] - ref["scores"])))
    for run in runs.values():
        run.pop("scores")
    return {
        "qid": req.query.qid,
        "presentations": len(perms),
        "shuffles": m,
        "null_repeats": null_repeats,
        "threads": threads,
        "goal_speedup": GOAL_SPEEDUP,
        "paths": runs,
    }


def training_step_paths(
    model_name: str,
    *,
    paths: Mapping[str, tuple[str, bool]] | None = None,
    isolate: bool = True,
    **settings: Any,
) -> dict[str, Any]:
    """One OC-SFT step at the studies' geometry along each path (module docstring);
    ``settings`` override :class:`StepSettings` fields (tests: a tiny model, fewer repeats)."""
    paths = TRAIN_PATHS if paths is None else paths
    geometry = {"num_candidates": 10, "lora_r": 16, "max_passage_chars": 300, "num_threads": 1}
    s = StepSettings(model_name, **{**geometry, **settings})
    runs: dict[str, Any] = {}
    for name, (dtype, compiled) in paths.items():
        kwargs: dict[str, Any] = {
            "mode": "oc_sft",
            "settings": replace(s, dtype=dtype),
            "compile": compiled,
        }
        runs[name] = isolated_step(kwargs, ALLOCATOR_ENV) if isolate else measure_step(**kwargs)
    ref = next(iter(runs.values()))
    for run in runs.values():
        run["cpu_speedup"] = ref["user_seconds_per_step"] / run["user_seconds_per_step"]
    return {
        "num_candidates": s.num_candidates,
        "lora_r": s.lora_r,
        "max_passage_chars": s.max_passage_chars,
        "threads": s.num_threads,
        "goal_speedup": GOAL_SPEEDUP,
        "paths": runs,
    }


def study_steps_probe(
    requests: Sequence[RerankRequest],
    *,
    model_name: str,
    psi_paths: Sequence[str],
    train_paths: Sequence[str],
    conditions: str,
    script: str,
) -> dict[str, Any]:
    """The studies' two steps along the named paths of :data:`PSI_PATHS` and
    :data:`TRAIN_PATHS` (e.g. today's alone, on a CPU that only emulates bfloat16), as a probe
    file of docs/results/bench (kind ``study_steps``, rendered by
    :mod:`~presdep_tools.bench.evidence`)."""
    for name in psi_paths:
        if name not in PSI_PATHS:
            raise ValueError(f"PSI path {name!r} is not one of {list(PSI_PATHS)}")
    for name in train_paths:
        if name not in TRAIN_PATHS:
            raise ValueError(f"training path {name!r} is not one of {list(TRAIN_PATHS)}")
    psi = (
        psi_step_benchmark(
            requests, model_name=model_name, paths={k: PSI_PATHS[k] for k in psi_paths}
        )
        if psi_paths
        else None
    )
    training = (
        training_step_paths(model_name, paths={k: TRAIN_PATHS[k] for k in train_paths})
        if train_paths
        else None
    )
    dtypes = {PSI_PATHS[k]["dtype"] for k in psi_paths} | {TRAIN_PATHS[k][0] for k in train_paths}
    return {
        "kind": "study_steps",
        "what": "issue 39, where the studies' two steps spend their wall time on this machine: "
        f"one query's PSI ({', '.join(psi_paths) or 'not run'}) and one OC-SFT step "
        f"({', '.join(train_paths) or 'not run'}), through tools/presdep_tools/bench/"
        "study_steps.py as poe bench runs them",
        "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "commit": git_state().get("commit") or "unknown",
        "cpu": f"{cpu_label(cpu_info())}, {os.cpu_count()} cores",
        "dtype": " and ".join(sorted(dtypes)),
        "threads": 1,
        "conditions": conditions,
        "results": {"psi": psi, "training": training},
        "scripts": {"study_steps": script},
    }
