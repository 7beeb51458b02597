"""Training-step benchmark: one OC-SFT step against one single-view step on the same batch.

Both steps train the same student (base + LoRA r) on the same query and candidates with the
same code the trainer runs (:func:`~presentation_dependence.training.model.student_readout`,
:func:`~presentation_dependence.training.loss.readout_loss`, AdamW on the LoRA parameters):
the single-view step reads view A, the OC-SFT step views A and B plus the consistency term.
Goal: OC-SFT ≤ 2.1× the single-view step in time and in peak memory. Each kind of step runs
eager (``compile=False``, the step before issue 14) and optimised (compiled decoder layers,
``readout/speed.py``), so the speed-up of the optimised step is measured in the same run.

* **time**: the median wall time of ``repeats`` steps (forward, backward, optimizer step),
  after ``warmup`` steps that are not timed (the first compiles, when compiled);
* **peak memory**: on CPU the peak resident set size during one warm step minus the RSS just
  before it (sampled every millisecond from ``/proc/self/statm``; tracemalloc cannot see
  torch's allocator), i.e. activations, gradients and the optimizer's transient buffers; the
  isolated process sets ``MALLOC_MMAP_THRESHOLD_`` so freed tensors leave the RSS instead of
  staying in glibc's heap. On GPU ``torch.cuda.max_memory_allocated`` during the step minus the
  allocation before it;
* **profile**: one more step under the torch profiler, self CPU time by operator;
* **allocator**: the OC-SFT step once more under the allocator settings of the study's training
  steps (``ALLOCATOR_ENV``: 32 MiB mmap threshold) against the measuring 128 KiB threshold,
  with user and system CPU time and minor page faults per step (``allocator_speedup``).

With ``isolate`` (the default) each kind of step runs in a fresh spawned process, so neither
inherits the other's allocator cache or compiled graphs; in-process (tests) the memory figures
are indicative.
"""

from __future__ import annotations

import contextlib
import logging
import math
import multiprocessing
import os
import resource
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import torch

from presdep_tools.bench.data import NOVELEVAL
from presentation_dependence.seeding import rng_from
from presentation_dependence.studies.sequencer import ALLOCATOR_ENV
from presentation_dependence.training.progress import rss_bytes

__all__ = [
    "GOAL_RATIO",
    "PHASES",
    "StepSettings",
    "isolated_step",
    "measure_step",
    "training_step_benchmark",
]

log = logging.getLogger(__name__)

GOAL_RATIO = 2.1
PHASES = ("forward", "backward", "optimizer")  # a step's phases: readout and loss, backward, AdamW


class _PeakRSS:
    """Samples the RSS in a thread; ``peak`` is the largest value seen while running."""

    def __init__(self, interval: float = 0.001) -> None:
        self.interval = interval
        self.peak = rss_bytes()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, rss_bytes())
            time.sleep(self.interval)

    def __enter__(self) -> _PeakRSS:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, rss_bytes())


@dataclass(frozen=True)
class StepSettings:
    """What both kinds of step train: the model, the query and its candidates, the student."""

    model_name: str = "embedded:smollm2-135m-instruct"
    data_path: str = NOVELEVAL
    query_index: int = 0
    num_candidates: int = 20
    max_passage_chars: int = 300
    dtype: str = "auto"
    lambda_: float = 1.0
    repeats: int = 3
    lora_r: int = 8
    num_threads: int | None = None


def measure_step(
    mode: str,
    settings: StepSettings,
    *,
    seed: int = 0,
    compile: bool = False,
    autocast: bool = False,
    warmup: int = 1,
    profile: bool = False,
) -> dict[str, Any]:
    """Time and peak memory of one training step of ``mode`` (``single_view`` or ``oc_sft``),
    eager or with compiled decoder layers (``compile``)."""
    s = settings
    if mode not in ("single_view", "oc_sft"):
        raise ValueError(f"mode must be single_view or oc_sft, got {mode!r}")
    if s.num_threads:
        torch.set_num_threads(s.num_threads)
    student, batch, views = _step_inputs(mode, s, seed=seed, compile=compile)
    step, phases = _step(student, batch, s.lambda_ if mode == "oc_sft" else 0.0, autocast=autocast)
    gpu = student.device.type == "cuda"
    timing = _time_steps(step, gpu=gpu, warmup=warmup, repeats=s.repeats)
    timed = slice(warmup + 1, warmup + 1 + s.repeats)  # after the warm-up and the memory step
    ops = _profile_step(step) if profile else None
    tokens = int(batch["attention_mask"].sum())
    return {
        "mode": mode,
        "compiled": student.compiled,
        "autocast_bfloat16": autocast,
        "attn_implementation": student.attn_implementation,
        "views": views,
        "prompt_tokens": tokens,
        "warmup_steps": warmup,
        "warmup_seconds": timing["warmup_seconds"],
        "step_seconds": timing["seconds"],
        "seconds_median": statistics.median(timing["seconds"]),
        # where a timed step's wall time went: readout and loss, backward, optimizer (medians)
        "phase_seconds_median": {k: statistics.median(v[timed]) for k, v in phases.items()},
        "tokens_per_second": tokens / statistics.median(timing["seconds"]),
        # CPU time of the timed steps, all threads: system time is the allocator's page faults
        "user_seconds_per_step": timing["user"],
        "system_seconds_per_step": timing["system"],
        "minor_faults_per_step": timing["faults"],
        "malloc_env": {k: os.environ.get(k) for k in sorted(ALLOCATOR_ENV)},
        "profile": ops,
        "peak_step_mb": timing["peak_step"] / 2**20,
        "peak_rss_mb": int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) / 1024,
        "memory_kind": "cuda max_memory_allocated" if gpu else "RSS increase during the step",
        "dtype": str(student.dtype).removeprefix("torch."),
        "device": str(student.device),
        "threads": torch.get_num_threads(),
        "trainable_parameters": student.parameter_counts()["trainable"],
    }


def _step_inputs(
    mode: str, s: StepSettings, *, seed: int, compile: bool
) -> tuple[Any, dict[str, torch.Tensor], int]:
    """The student (in training mode on its device), one collated batch of the settings'
    query with random labels, and its number of views."""
    from presentation_dependence.data import load_dataset
    from presentation_dependence.data.config import DataConfig
    from presentation_dependence.rerankers.grade import GradeRerankerOptions
    from presentation_dependence.training.collate import ReadoutCollator, TrainExample, draw_views
    from presentation_dependence.training.config import LoraOptions
    from presentation_dependence.training.model import load_student

    data = DataConfig(path=s.data_path, top_k=s.num_candidates, max_queries=s.query_index + 1)
    req = load_dataset(data).requests[s.query_index]
    n = len(req.candidates)
    opts = GradeRerankerOptions(
        model_name=s.model_name,
        dtype=s.dtype,
        device="auto",
        max_passage_chars=s.max_passage_chars,
        chunk_size=max(n, 1),
        compile=compile,
    )
    student = load_student(opts, LoraOptions(r=s.lora_r, alpha=2 * s.lora_r), seed=seed)
    student.model.to(student.device).train()
    views = draw_views(n, 2, seed=seed, key=req.query.qid, epoch=0)
    ex = TrainExample(
        key=req.query.qid,
        query=req.query.text,
        texts=tuple(c.text for c in req.candidates),
        labels=rng_from(seed).uniform(0, 3, size=n),
        views=views[:1] if mode == "single_view" else views,
    )
    batch = ReadoutCollator(student.builder, student.pad_token_id)([ex])
    return student, {k: v.to(student.device) for k, v in batch.items()}, len(ex.views)


def _step(
    student: Any, batch: dict[str, torch.Tensor], lam: float, *, autocast: bool
) -> tuple[Callable[[], float], dict[str, list[float]]]:
    """One optimizer step (readout, loss, backward, AdamW) on ``batch``, returning the loss,
    and the wall seconds of each call's phases (:data:`PHASES`), appended call by call."""
    from presentation_dependence.training.loss import readout_loss
    from presentation_dependence.training.model import student_readout

    model = student.model
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
    gpu = student.device.type == "cuda"

    def cast() -> contextlib.AbstractContextManager[Any]:
        if autocast:
            return torch.autocast(student.device.type, dtype=torch.bfloat16)
        return contextlib.nullcontext()

    phases: dict[str, list[float]] = {k: [] for k in PHASES}

    def mark() -> float:
        if gpu:
            torch.cuda.synchronize()
        return time.perf_counter()

    def step() -> float:
        t0 = mark()
        with cast():
            scores = student_readout(
                model,
                batch,
                student.grade_token_ids,
                use_logits_to_keep=student.use_logits_to_keep,
            ).scores
        loss = readout_loss(scores, batch["teacher_scores"], batch["candidate_mask"], lam).total
        t1 = mark()
        loss.backward()
        t2 = mark()
        opt.step()
        opt.zero_grad(set_to_none=True)
        t3 = mark()
        for name, seconds in zip(PHASES, (t1 - t0, t2 - t1, t3 - t2), strict=True):
            phases[name].append(seconds)
        return float(loss.detach())

    return step, phases


def _time_steps(
    step: Callable[[], float], *, gpu: bool, warmup: int, repeats: int
) -> dict[str, Any]:
    """Warm-up seconds, the peak memory of one step, the timed steps' seconds and their CPU
    time and page faults per step."""
    t0 = time.perf_counter()
    for _ in range(warmup):
        step()
    warmup_seconds = time.perf_counter() - t0
    before = 0
    if gpu:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
    rss_before = rss_bytes()
    with _PeakRSS() as sampler:
        step()
    peak_step = torch.cuda.max_memory_allocated() - before if gpu else sampler.peak - rss_before
    seconds = []
    usage0 = resource.getrusage(resource.RUSAGE_SELF)
    for _ in range(repeats):
        t0 = time.perf_counter()
        step()
        seconds.append(time.perf_counter() - t0)
    usage1 = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "warmup_seconds": warmup_seconds,
        "peak_step": peak_step,
        "seconds": seconds,
        "user": (usage1.ru_utime - usage0.ru_utime) / repeats,
        "system": (usage1.ru_stime - usage0.ru_stime) / repeats,
        "faults": (usage1.ru_minflt - usage0.ru_minflt) / repeats,
    }


def _profile_step(step: Callable[[], float]) -> list[dict[str, Any]]:
    """The top operators of one profiled step (torch.profiler, CPU)."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    from presdep_tools.bench.speed import summarise_profile

    with torch_profile(activities=[ProfilerActivity.CPU]) as prof:
        step()
    return summarise_profile(prof)


def _measure_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    logging.basicConfig(level=logging.WARNING)
    return measure_step(**kwargs)


# name -> (mode, compile, autocast): the parts of the benchmark, each in its own process.
PARTS: dict[str, tuple[str, bool, bool]] = {
    "single_view": ("single_view", False, False),
    "oc_sft": ("oc_sft", False, False),
    "single_view_compiled": ("single_view", True, False),
    "oc_sft_compiled": ("oc_sft", True, False),
    "oc_sft_autocast": ("oc_sft", False, True),
    "oc_sft_study_allocator": ("oc_sft", False, False),
}
# glibc returns allocations at least this large to the OS when they are freed, so the RSS of
# the isolated process follows the live tensors and a warm step's peak is its own memory.
MMAP_THRESHOLD = 1 << 17
MEASURING_ALLOCATOR = {"MALLOC_MMAP_THRESHOLD_": str(MMAP_THRESHOLD)}
# The part that runs under the allocator settings the study's training steps get (ALLOCATOR_ENV):
# its time against ``oc_sft``'s is what the small mmap threshold costs (``allocator_speedup``).
PART_ALLOCATOR = {"oc_sft_study_allocator": ALLOCATOR_ENV}


def isolated_step(kwargs: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    """:func:`measure_step` of ``kwargs`` in a fresh spawned process under environment ``env``."""
    ctx = multiprocessing.get_context("spawn")
    before = {k: os.environ.get(k) for k in env}
    os.environ.update(env)  # glibc reads MALLOC_* once, when the child starts
    try:
        with ctx.Pool(1) as pool:
            return pool.apply(_measure_kwargs, (kwargs,))
    finally:
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def training_step_benchmark(
    model_name: str = StepSettings.model_name,
    *,
    isolate: bool = True,
    parts: tuple[str, ...] = tuple(PARTS),
    profile: bool = True,
    **settings: Any,
) -> dict[str, Any]:
    """OC-SFT vs single-view steps on the same batch, eager and optimised: times, memory, ratios.

    ``settings`` are the other fields of :class:`StepSettings` (``num_candidates``,
    ``max_passage_chars``, ``dtype``, ``lambda_``, ``repeats``, ``lora_r``, ``num_threads``, ...).
    Returns ``{<part>: {...}, "time_ratio", "memory_ratio", "goal_ratio", "meets_goal",
    "compiled_speedup", ...}`` with each part (:data:`PARTS`) as :func:`measure_step`; the
    ratios of OC-SFT to single view are those of the eager steps (and ``*_compiled`` of the
    compiled ones when both ran).
    """
    s = StepSettings(model_name, **settings)
    out: dict[str, Any] = {
        "model": model_name,
        "num_candidates": s.num_candidates,
        "max_passage_chars": s.max_passage_chars,
        "lora_r": s.lora_r,
        "lambda": s.lambda_,
        "isolated": isolate,
        "goal_ratio": GOAL_RATIO,
    }
    for name in parts:
        mode, compiled, autocast = PARTS[name]
        kwargs: dict[str, Any] = {
            "mode": mode,
            "settings": replace(s, dtype="float32") if autocast else s,
            "compile": compiled,
            "autocast": autocast,
            "profile": profile and mode == "oc_sft" and not autocast,
        }
        env = PART_ALLOCATOR.get(name, MEASURING_ALLOCATOR)
        out[name] = isolated_step(kwargs, env) if isolate else measure_step(**kwargs)
        log.info(
            "%s step: %.3f s (median of %d), %.0f tokens/s, +%.0f MB",
            name,
            out[name]["seconds_median"],
            s.repeats,
            out[name]["tokens_per_second"],
            out[name]["peak_step_mb"],
        )
    _add_ratios(out, isolate)
    return out


def _add_ratios(out: dict[str, Any], isolate: bool) -> None:
    """Into ``out``: OC-SFT over single view (eager, compiled) against the goal, and the
    speed-ups of the study's allocator, the compiled and the autocast OC-SFT step."""
    for suffix in ("", "_compiled"):
        single, oc = out.get("single_view" + suffix), out.get("oc_sft" + suffix)
        if single is None or oc is None:
            continue
        t = oc["seconds_median"] / single["seconds_median"]
        m = oc["peak_step_mb"] / single["peak_step_mb"] if single["peak_step_mb"] > 0 else math.nan
        out["time_ratio" + suffix] = t
        out["memory_ratio" + suffix] = m
        out["meets_goal" + suffix] = {"time": t <= GOAL_RATIO, "memory": m <= GOAL_RATIO}
    study = out.get("oc_sft_study_allocator")
    if "oc_sft" in out and study is not None:
        out["allocator_speedup"] = out["oc_sft"]["seconds_median"] / study["seconds_median"]
        out["allocator_env"] = dict(ALLOCATOR_ENV) if isolate else None  # in-process: inherited
    for name in ("oc_sft_compiled", "oc_sft_autocast"):
        if "oc_sft" in out and name in out:
            out[name.replace("oc_sft", "speedup")] = (
                out["oc_sft"]["seconds_median"] / out[name]["seconds_median"]
            )
