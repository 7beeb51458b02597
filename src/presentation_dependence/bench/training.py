"""Training-step benchmark: one OC-SFT step against one single-view step on the same batch.

Both steps train the same student (base + LoRA r) on the same query and candidates with the
same code the trainer runs (:func:`~presentation_dependence.training.model.student_scores`,
:func:`~presentation_dependence.training.loss.readout_loss`, AdamW on the LoRA parameters):
the single-view step reads view A, the OC-SFT step views A and B plus the consistency term.
Goal: OC-SFT ≤ 2.1× the single-view step in time and in peak memory.

* **time**: the median wall time of ``repeats`` steps (forward, backward, optimizer step),
  after a first step that is not timed;
* **peak memory**: on CPU the peak resident set size during that first step minus the RSS just
  before it (sampled every millisecond from ``/proc/self/statm``; tracemalloc cannot see
  torch's allocator), i.e. activations, gradients and the optimizer state the step creates;
  on GPU ``torch.cuda.max_memory_allocated`` during the step minus the allocation before it.

With ``isolate`` (the default) each kind of step runs in a fresh spawned process, so neither
inherits the other's allocator cache; in-process (tests) the memory figures are indicative.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import resource
import statistics
import threading
import time
from pathlib import Path
from typing import Any

import torch

from presentation_dependence.seeding import rng_from

__all__ = ["GOAL_RATIO", "measure_step", "training_benchmark_markdown", "training_step_benchmark"]

log = logging.getLogger(__name__)

GOAL_RATIO = 2.1
NOVELEVAL = "fixtures/noveleval/noveleval.jsonl"


def _rss_bytes() -> int:
    try:
        statm = Path("/proc/self/statm").read_text(encoding="ascii")
        return int(statm.split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


class _PeakRSS:
    """Samples the RSS in a thread; ``peak`` is the largest value seen while running."""

    def __init__(self, interval: float = 0.001) -> None:
        self.interval = interval
        self.peak = _rss_bytes()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, _rss_bytes())
            time.sleep(self.interval)

    def __enter__(self) -> _PeakRSS:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _rss_bytes())


def measure_step(
    mode: str,
    *,
    model_name: str,
    data_path: str = NOVELEVAL,
    query_index: int = 0,
    num_candidates: int = 20,
    max_passage_chars: int = 300,
    dtype: str = "auto",
    lambda_: float = 1.0,
    repeats: int = 3,
    lora_r: int = 8,
    num_threads: int | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """Time and peak memory of one training step of ``mode`` (``single_view`` or ``oc_sft``)."""
    from presentation_dependence.config.data_config import DataConfig
    from presentation_dependence.data import load_dataset
    from presentation_dependence.rerankers.grade import GradeRerankerOptions
    from presentation_dependence.training.collate import ReadoutCollator, TrainExample, draw_views
    from presentation_dependence.training.config import LoraOptions
    from presentation_dependence.training.loss import readout_loss
    from presentation_dependence.training.model import load_student, student_scores

    if mode not in ("single_view", "oc_sft"):
        raise ValueError(f"mode must be single_view or oc_sft, got {mode!r}")
    if num_threads:
        torch.set_num_threads(num_threads)
    data = DataConfig(path=data_path, top_k=num_candidates, max_queries=query_index + 1)
    req = load_dataset(data).requests[query_index]
    n = len(req.candidates)
    opts = GradeRerankerOptions(
        model_name=model_name,
        dtype=dtype,
        device="auto",
        max_passage_chars=max_passage_chars,
        chunk_size=max(n, 1),
    )
    student = load_student(opts, LoraOptions(r=lora_r, alpha=2 * lora_r), seed=seed)
    model = student.model.to(student.device)
    model.train()
    views = draw_views(n, 2, seed=seed, key=req.query.qid, epoch=0)
    labels = rng_from(seed).uniform(0, 3, size=n)
    ex = TrainExample(
        key=req.query.qid,
        query=req.query.text,
        texts=tuple(c.text for c in req.candidates),
        labels=labels,
        views=views[:1] if mode == "single_view" else views,
    )
    batch = ReadoutCollator(student.builder, student.pad_token_id)([ex])
    batch = {k: v.to(student.device) for k, v in batch.items()}
    lam = lambda_ if mode == "oc_sft" else 0.0
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-4)
    gpu = student.device.type == "cuda"

    def step() -> float:
        scores = student_scores(
            model, batch, student.grade_token_ids, use_logits_to_keep=student.use_logits_to_keep
        )
        loss = readout_loss(scores, batch["teacher_scores"], batch["candidate_mask"], lam).total
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if gpu:
            torch.cuda.synchronize()
        return float(loss.detach())

    if gpu:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
    rss_before = _rss_bytes()
    with _PeakRSS() as sampler:
        step()
    peak_step = torch.cuda.max_memory_allocated() - before if gpu else sampler.peak - rss_before
    seconds = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        step()
        seconds.append(time.perf_counter() - t0)
    return {
        "mode": mode,
        "views": len(ex.views),
        "prompt_tokens": int(batch["attention_mask"].sum()),
        "step_seconds": seconds,
        "seconds_median": statistics.median(seconds),
        "peak_step_mb": peak_step / 2**20,
        "peak_rss_mb": int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) / 1024,
        "memory_kind": "cuda max_memory_allocated" if gpu else "RSS increase during the step",
        "dtype": str(student.dtype).removeprefix("torch."),
        "device": str(student.device),
        "threads": torch.get_num_threads(),
        "trainable_parameters": student.parameter_counts()["trainable"],
    }


def _measure_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    logging.basicConfig(level=logging.WARNING)
    return measure_step(**kwargs)


def training_step_benchmark(
    model_name: str = "embedded:smollm2-135m-instruct",
    *,
    data_path: str = NOVELEVAL,
    query_index: int = 0,
    num_candidates: int = 20,
    max_passage_chars: int = 300,
    dtype: str = "auto",
    lambda_: float = 1.0,
    repeats: int = 3,
    lora_r: int = 8,
    num_threads: int | None = None,
    isolate: bool = True,
) -> dict[str, Any]:
    """One OC-SFT step vs one single-view step on the same batch: times, memory and ratios.

    Returns ``{"single_view": {...}, "oc_sft": {...}, "time_ratio", "memory_ratio",
    "goal_ratio", "meets_goal": {"time", "memory"}, ...}``; each part as :func:`measure_step`.
    """
    common = {
        "model_name": model_name,
        "data_path": data_path,
        "query_index": query_index,
        "num_candidates": num_candidates,
        "max_passage_chars": max_passage_chars,
        "dtype": dtype,
        "lambda_": lambda_,
        "repeats": repeats,
        "lora_r": lora_r,
        "num_threads": num_threads,
    }
    parts: dict[str, dict[str, Any]] = {}
    for mode in ("single_view", "oc_sft"):
        kwargs = {"mode": mode, **common}
        if isolate:
            ctx = multiprocessing.get_context("spawn")
            with ctx.Pool(1) as pool:
                parts[mode] = pool.apply(_measure_kwargs, (kwargs,))
        else:
            parts[mode] = measure_step(**kwargs)  # type: ignore[arg-type]
        log.info(
            "%s step: %.3f s (median of %d), +%.0f MB",
            mode,
            parts[mode]["seconds_median"],
            repeats,
            parts[mode]["peak_step_mb"],
        )
    single, oc = parts["single_view"], parts["oc_sft"]
    time_ratio = oc["seconds_median"] / single["seconds_median"]
    memory_ratio = (
        oc["peak_step_mb"] / single["peak_step_mb"] if single["peak_step_mb"] > 0 else float("nan")
    )
    return {
        "model": model_name,
        "num_candidates": num_candidates,
        "max_passage_chars": max_passage_chars,
        "lora_r": lora_r,
        "lambda": lambda_,
        "isolated": isolate,
        "single_view": single,
        "oc_sft": oc,
        "time_ratio": time_ratio,
        "memory_ratio": memory_ratio,
        "goal_ratio": GOAL_RATIO,
        "meets_goal": {"time": time_ratio <= GOAL_RATIO, "memory": memory_ratio <= GOAL_RATIO},
    }


def training_benchmark_markdown(result: dict[str, Any]) -> str:
    """A Markdown section for docs/BENCHMARKS.md."""
    s, o = result["single_view"], result["oc_sft"]
    rows = [
        "## Training step: OC-SFT vs single view",
        "",
        f"`{result['model']}`, {s['dtype']} on {s['device']} ({s['threads']} threads), LoRA r="
        f"{result['lora_r']} ({s['trainable_parameters']:,} trainable parameters), one query with "
        f"{result['num_candidates']} candidates cut to {result['max_passage_chars']} characters; "
        f"median of {len(s['step_seconds'])} steps; memory: {s['memory_kind']}"
        f"{'' if result['isolated'] else ' (in-process: indicative)'}.",
        "",
        "| step | views | prompt tokens | time per step | peak step memory |",
        "|---|---|---|---|---|",
    ]
    for name, part in (("single view", s), ("OC-SFT", o)):
        rows.append(
            f"| {name} | {part['views']} | {part['prompt_tokens']:,} | "
            f"{part['seconds_median']:.3f} s | {part['peak_step_mb']:.0f} MB |"
        )
    ok = result["meets_goal"]
    rows += [
        "",
        f"Ratio OC-SFT / single view: time **{result['time_ratio']:.2f}×** "
        f"({'meets' if ok['time'] else 'misses'} the ≤ {result['goal_ratio']}× goal), memory "
        f"**{result['memory_ratio']:.2f}×** ({'meets' if ok['memory'] else 'misses'} it).",
        "",
    ]
    return "\n".join(rows)
