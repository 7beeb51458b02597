"""Readout speed levers, each measured on and off in one run (issue 14; ``readout/speed.py``).

Every row scores the same listwise prompts (B = 20 candidates each, one prompt per query) with
one configuration: dtype, attention kernel, compiled layers, prompts per pass, logits at the
slots only, torch threads, bfloat16 autocast over float32 weights. It reports documents and
prompt tokens per second, the achieved FLOP/s as a fraction of a dense matmul in the same
dtype and run (``2·N·T`` and, as a second figure, with causal attention's ``2·L·d·T²``), and the
largest |ΔE[g]| against the float32, eager-attention, uncompiled reference. ``eager`` is the
path before issue 14 (bfloat16, SDPA, not compiled); ``optimised`` compiles the layers too
(the default in bfloat16 on CPU). The pair is timed alternately ``reps`` times (best of each, and the median of the paired ratios: the
machine's pass-to-pass noise is large), every other row once after a warm pass.

:func:`shared_prefix` measures reusing the instruction + query KV cache across M presentations
of one query against M full passes; :func:`profile_forward` summarises a forward pass by
operator (torch profiler, self CPU time).
"""

from __future__ import annotations

import contextlib
import copy
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import torch

from presdep_tools.bench.readout import matmul_flops, non_embedding_parameters
from presentation_dependence.readout.backend import TransformersBackend
from presentation_dependence.readout.prompt import BuiltPrompt, PromptBuilder
from presentation_dependence.records import RerankRequest
from presentation_dependence.seeding import named_rng

__all__ = [
    "profile_forward",
    "readout_speed_benchmark",
    "shared_prefix",
    "summarise_profile",
]

log = logging.getLogger(__name__)

_COMPILED = "inductor fused kernels (compiled graph)"


def _attention_flops(model: Any, prompts: Sequence[BuiltPrompt]) -> int:
    cfg = model.config.get_text_config() if hasattr(model.config, "get_text_config") else None
    cfg = cfg or model.config
    return sum(2 * cfg.num_hidden_layers * cfg.hidden_size * len(p.input_ids) ** 2 for p in prompts)


def _expected(probs: Sequence[np.ndarray]) -> np.ndarray:
    return np.concatenate([p @ np.arange(p.shape[1], dtype=np.float64) for p in probs])


@contextlib.contextmanager
def _threads(n: int | None) -> Iterator[None]:
    before = torch.get_num_threads()
    if n:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@contextlib.contextmanager
def _full_logits(backend: TransformersBackend) -> Iterator[None]:
    before = backend.supports_logits_to_keep
    backend.supports_logits_to_keep = False
    try:
        yield
    finally:
        backend.supports_logits_to_keep = before


def _row(
    name: str,
    backend: TransformersBackend,
    prompts: Sequence[BuiltPrompt],
    ids: Sequence[int],
    *,
    compile: bool = False,
    batch_size: int = 1,
    context: Callable[[], contextlib.AbstractContextManager[Any]] = contextlib.nullcontext,
) -> Callable[[], dict[str, Any]]:
    def run() -> dict[str, Any]:
        with context():
            probs, stats = backend.grade_probs(
                prompts, ids, batch_size=batch_size, one_at_a_time=batch_size == 1, compile=compile
            )
        return {"name": name, "seconds": stats.seconds, "stats": stats, "e": _expected(probs)}

    return run


def readout_speed_benchmark(
    requests: Sequence[RerankRequest],
    *,
    model_name: str,
    chunk_size: int = 20,
    max_passage_chars: int = 1200,
    reps: int = 7,
) -> dict[str, Any]:
    """Every lever on and off on the same listwise prompts; a JSON-ready dict (module doc)."""
    (bf, bf_eager, fp, fp_eager), builder = _load_backends(
        model_name, chunk_size, max_passage_chars
    )
    prompts = [
        builder.build(r.query.text, [c.text for c in r.candidates[:chunk_size]]) for r in requests
    ]
    ids = builder.grade_token_ids
    threads = torch.get_num_threads()
    dtypes = {"bfloat16": torch.bfloat16, "float32": torch.float32}
    mm_start = {k: matmul_flops(v) for k, v in dtypes.items()}
    work = _work(bf, prompts)
    first, steady = _compile_passes(bf, prompts[0], ids)
    specs = _lever_specs(bf, bf_eager, fp, fp_eager, prompts, ids)
    runs = _timed_runs(specs, reps)
    # The matmul rate is timed before and after the rows and the higher one is the reference:
    # a short matmul timed early in a process can read well below the machine's rate (a 2x
    # gap was seen), which would inflate every fraction below.
    mm_end = {k: matmul_flops(v) for k, v in dtypes.items()}
    mm = {k: max(mm_start[k], mm_end[k]) for k in dtypes}
    ref = min(runs[specs[0][2]], key=lambda r: r["seconds"])["e"]
    rows = [
        _lever_row(lever, dtype, setting, runs[setting], ref, mm[dtype], work)
        for lever, dtype, setting, _ in specs
    ]
    by = {r["lever"]: r for r in rows}
    return {
        "model_name": model_name,
        "threads": threads,
        "prompts": len(prompts),
        "docs": work["docs"],
        "tokens": work["tokens"],
        "non_embedding_parameters": work["n"],
        "attention_flops": work["attn"],
        "matmul_flops": mm,
        "matmul_flops_timings": {"start": mm_start, "end": mm_end},
        "first_compiled_pass_seconds": first,
        "steady_compiled_pass_seconds": steady,
        "rows": rows,
        "optimised_over_eager": by["eager"]["seconds"] / by["optimised"]["seconds"],
        "optimised_over_eager_paired": [
            e["seconds"] / o["seconds"]
            for e, o in zip(runs[specs[3][2]], runs[specs[4][2]], strict=True)
        ],
        "profile": {
            "eager": profile_forward(bf, prompts[0], ids, compile=False),
            "optimised": profile_forward(bf, prompts[0], ids, compile=True),
        },
        "shared_prefix": shared_prefix(bf, builder, requests[0], chunk_size=chunk_size),
    }


def _work(backend: TransformersBackend, prompts: Sequence[BuiltPrompt]) -> dict[str, Any]:
    """The work of one pass over ``prompts``: non-embedding parameters ``n``, causal
    attention's FLOPs ``attn``, prompt ``tokens`` and ``docs`` read out."""
    return {
        "n": non_embedding_parameters(backend.model),
        "attn": _attention_flops(backend.model, prompts),
        "tokens": sum(len(p.input_ids) for p in prompts),
        "docs": sum(len(p.readout_positions) for p in prompts),
    }


def _compile_passes(
    backend: TransformersBackend, prompt: BuiltPrompt, ids: Sequence[int]
) -> tuple[float, float]:
    """Seconds of the process's first compiled pass (compiling) and of the next one."""
    log.info("[speed] compiling the decoder layers (first compiled pass)")
    first = _row("compile", backend, [prompt], ids, compile=True)()["seconds"]
    steady = _row("compile", backend, [prompt], ids, compile=True)()["seconds"]
    return first, steady


def _load_backends(
    model_name: str, chunk_size: int, max_passage_chars: int
) -> tuple[tuple[TransformersBackend, ...], PromptBuilder]:
    """The model loaded four ways (bfloat16 and float32, each with SDPA and with eager
    attention: ``bf, bf_eager, fp, fp_eager``) and the listwise prompt builder."""
    from presentation_dependence.rerankers.grade import GradeReranker, GradeRerankerOptions

    def load(dtype: str, attn: str) -> tuple[TransformersBackend, PromptBuilder]:
        r = GradeReranker(
            GradeRerankerOptions(
                model_name=model_name,
                dtype=dtype,
                attn_implementation=attn,  # type: ignore[arg-type]
                max_passage_chars=max_passage_chars,
                chunk_size=chunk_size,
            )
        )
        return r._ensure_loaded()

    bf, builder = load("bfloat16", "sdpa")
    others = [load(dtype, attn)[0] for dtype, attn in _OTHER_LOADS]
    return (bf, *others), builder


# After bfloat16 with SDPA, in this order: the lever table's other attention kernels and dtype.
_OTHER_LOADS = (("bfloat16", "eager"), ("float32", "sdpa"), ("float32", "eager"))


_Spec = tuple[str, str, str, Callable[[], dict[str, Any]]]


def _lever_specs(
    bf: TransformersBackend,
    bf_eager: TransformersBackend,
    fp: TransformersBackend,
    fp_eager: TransformersBackend,
    prompts: Sequence[Any],
    ids: Sequence[int],
) -> list[_Spec]:
    """``(lever, dtype, setting, timed pass)`` of every row of the lever table, in order: the
    float32 eager reference first, the bfloat16 eager and compiled rows 4th and 5th."""

    def autocast() -> contextlib.AbstractContextManager[Any]:
        return torch.autocast("cpu", dtype=torch.bfloat16)

    return [
        ("reference", "float32", "float32, eager attention", _row("ref", fp_eager, prompts, ids)),
        ("attention", "float32", "float32, SDPA", _row("fp32-sdpa", fp, prompts, ids)),
        ("attention", "bfloat16", "eager attention", _row("bf-eager", bf_eager, prompts, ids)),
        ("eager", "bfloat16", "SDPA, not compiled (before)", _row("eager", bf, prompts, ids)),
        (
            "optimised",
            "bfloat16",
            "SDPA, compiled (compile: true)",
            _row("opt", bf, prompts, ids, compile=True),
        ),
        (
            "autocast",
            "bfloat16",
            "float32 weights + bfloat16 autocast, SDPA",
            _row("autocast", fp, prompts, ids, context=autocast),
        ),
        (
            "padding",
            "bfloat16",
            f"{len(prompts)} prompts per pass (left-padded), SDPA",
            _row("batched", bf, prompts, ids, batch_size=len(prompts)),
        ),
        (
            "logits_to_keep",
            "bfloat16",
            "logits at every position, SDPA",
            _row("full-logits", bf, prompts, ids, context=lambda: _full_logits(bf)),
        ),
        (
            "threads",
            "bfloat16",
            "SDPA, not compiled, 1 thread",
            _row("1-thread", bf, prompts, ids, context=lambda: _threads(1)),
        ),
    ]


def _timed_runs(specs: Sequence[_Spec], reps: int) -> dict[str, list[dict[str, Any]]]:
    """A warm pass of each row, then one timed pass each; the eager and compiled rows are
    timed ``reps`` times in alternation (their ratio is the table's headline)."""
    runs: dict[str, list[dict[str, Any]]] = {}
    for lever, _, setting, fn in specs:
        log.info("[speed] %s: %s", lever, setting)
        fn()
        runs[setting] = [fn()]
    paired = [s for s in specs if s[0] in ("eager", "optimised")]
    for _ in range(reps - 1):
        for _, _, setting, fn in paired:
            runs[setting].append(fn())
    return runs


def _lever_row(
    lever: str,
    dtype: str,
    setting: str,
    timed: Sequence[dict[str, Any]],
    ref: Any,
    matmul_rate: float,
    work: dict[str, Any],
) -> dict[str, Any]:
    """One row of the lever table from its fastest timed pass."""
    best = min(timed, key=lambda r: r["seconds"])
    t = best["seconds"]
    rate = 2 * work["n"] * work["tokens"] / t
    return {
        "lever": lever,
        "dtype": dtype,
        "setting": setting,
        "seconds": t,
        "timed": len(timed),
        "docs_per_second": work["docs"] / t,
        "tokens_per_second": work["tokens"] / t,
        "padded_tokens": best["stats"].padded_tokens,
        "achieved_flops": rate,
        "achieved_flops_with_attention": rate + work["attn"] / t,
        "fraction_of_matmul": rate / matmul_rate,
        "fraction_of_matmul_with_attention": (rate + work["attn"] / t) / matmul_rate,
        "max_abs_de_vs_reference": float(np.abs(best["e"] - ref).max()),
    }


def summarise_profile(prof: Any, top: int = 10) -> list[dict[str, Any]]:
    """Self CPU time by operator, largest first: name, share, milliseconds, calls.

    Inductor's fused kernels show as one ``Call CompiledFxGraph`` event per graph call; they are
    merged into one row.
    """
    totals: dict[str, list[float]] = {}
    for ev in prof.key_averages():
        name = _COMPILED if "CompiledFxGraph" in ev.key else ev.key
        slot = totals.setdefault(name, [0.0, 0.0])
        slot[0] += ev.self_cpu_time_total
        slot[1] += ev.count
    grand = sum(v[0] for v in totals.values()) or 1.0
    ranked = sorted(totals.items(), key=lambda kv: -kv[1][0])[:top]
    return [
        {"op": k, "share": v[0] / grand, "ms": v[0] / 1000, "calls": int(v[1])} for k, v in ranked
    ]


def profile_forward(
    backend: TransformersBackend, prompt: BuiltPrompt, ids: Sequence[int], *, compile: bool
) -> list[dict[str, Any]]:
    """One forward pass of ``prompt`` under the torch profiler (after a warm one), by operator."""
    from torch.profiler import ProfilerActivity, profile

    backend.grade_probs([prompt], ids, compile=compile)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        backend.grade_probs([prompt], ids, compile=compile)
    return summarise_profile(prof)


@torch.inference_mode()
def shared_prefix(
    backend: TransformersBackend,
    builder: PromptBuilder,
    request: RerankRequest,
    *,
    chunk_size: int = 20,
    presentations: int = 4,
    seed: int = 0,
) -> dict[str, Any]:
    """M presentations of one query: M full passes against the shared prefix's KV cache + M
    suffix passes (the cache copied for each). Not compiled, SDPA as loaded."""
    texts = [c.text for c in request.candidates[:chunk_size]]
    rng = named_rng(seed, "bench-shared-prefix", request.query.qid)
    prompts = [
        builder.build(request.query.text, [texts[i] for i in rng.permutation(len(texts))])
        for _ in range(presentations)
    ]
    ids = builder.grade_token_ids
    first = prompts[0].input_ids
    shared = _common_prefix(prompts)
    grades = torch.tensor(list(ids), dtype=torch.long)
    dev = backend.device

    def with_prefix() -> tuple[float, np.ndarray]:
        t0 = time.perf_counter()
        head = torch.tensor([first[:shared]], device=dev)
        cache = backend.model(input_ids=head, use_cache=True).cache
        out = []
        for p in prompts:
            n = len(p.input_ids)
            logits = backend.model(
                input_ids=torch.tensor([p.input_ids[shared:]], device=dev),
                cache=copy.deepcopy(cache),
                attention_mask=torch.ones((1, n), dtype=torch.long, device=dev),
                position_ids=torch.arange(shared, n, device=dev)[None],
                use_cache=True,
                logits_to_keep=torch.tensor([r - shared for r in p.readout_positions], device=dev),
            ).logits[0]
            probs = torch.softmax(logits.index_select(-1, grades.to(dev)).float(), -1)
            out.append(probs.double().cpu().numpy())
        return time.perf_counter() - t0, _expected(out)

    def full() -> tuple[float, np.ndarray]:
        probs, stats = backend.grade_probs(prompts, ids, one_at_a_time=True)
        return stats.seconds, _expected(probs)

    full(), with_prefix()  # warm
    (t_full, e_full), (t_prefix, e_prefix) = full(), with_prefix()
    return {
        "presentations": presentations,
        "prompt_tokens": [len(p.input_ids) for p in prompts],
        "shared_prefix_tokens": shared,
        "full_seconds": t_full,
        "prefix_seconds": t_prefix,
        "speedup": t_full / t_prefix,
        "max_abs_de": float(np.abs(e_full - e_prefix).max()),
    }


def _common_prefix(prompts: Sequence[BuiltPrompt]) -> int:
    """How many leading tokens every prompt shares."""
    first = prompts[0].input_ids
    shared = 0
    while shared < min(len(p.input_ids) for p in prompts) and all(
        p.input_ids[shared] == first[shared] for p in prompts
    ):
        shared += 1
    return shared
