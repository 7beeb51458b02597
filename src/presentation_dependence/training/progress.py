"""Training progress without a terminal: log lines and ``<output_dir>/train_log.jsonl``.

Every ``train.logging_steps`` optimizer steps, and also at every checkpoint step and the last
step, :class:`ProgressLog` (main process) writes one plain log line through :mod:`logging`::

    step 12/40 (epoch 0.60): loss 0.8123 (fit 0.7010, consistency 0.1113), 1.23 s/step, ETA 0:00:34, RSS 3.1 GB (peak 4.8 GB)

and appends the same figures as one JSON object to ``train_log.jsonl`` (``step``,
``max_steps``, ``epoch``, ``loss``, ``fit``, ``consistency``, ``grad_norm``,
``learning_rate``, ``s_per_step``, ``eta_s``, ``rss_gb``: the process's resident size between steps, ``peak_rss_gb``: its peak so
far, which the steps reach, ``cpu_s``: this process's CPU seconds inside the window's optimizer
steps, all threads, checkpoint saving and held-out points excluded, ``tokens``: the prompt
tokens trained on in the window, padding excluded, summed over the processes, ``time``; a
run's cost is the sum over its lines: :func:`training_cost`). Event lines mark a ``start``, a
``resume`` and the ``end`` of a training call. s/step counts the steps of the current process
only. Logging at every checkpoint step makes each checkpoint close a log window, so a resumed
run's windows are the uninterrupted run's.

On a resume from the checkpoint of step k, :func:`start_log` keeps the lines of steps <= k,
drops the later ones (those steps are trained again and logged again; so is a line cut by the
kill) and appends a ``resume`` line: the file then holds each step's line once.
"""

from __future__ import annotations

import json
import logging
import os
import resource
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from presentation_dependence.io.atomic import atomic_write_text

__all__ = ["TRAIN_LOG", "ProgressLog", "rss_bytes", "run_loss", "start_log", "training_cost"]

log = logging.getLogger(__name__)

TRAIN_LOG = "train_log.jsonl"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def start_log(
    path: Path,
    resumed_step: int | None,
    checkpoint: str | None = None,
    *,
    continued_in: str | None = None,
) -> int:
    """Begin ``path`` for a fresh run, or cut it back to ``resumed_step`` and mark the resume.

    Returns the number of lines dropped."""
    if resumed_step is None:
        atomic_write_text(path, json.dumps({"event": "start", "step": 0, "time": _now()}) + "\n")
        return 0
    kept: list[str] = []
    dropped = 0
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                rec = json.loads(line)
                ok = isinstance(rec, dict) and int(rec["step"]) <= resumed_step
            except (ValueError, KeyError, TypeError):
                ok = False
            if ok:
                kept.append(line)
            else:
                dropped += 1
    event = {
        "event": "resume",
        "step": resumed_step,
        "checkpoint": checkpoint,
        "dropped_lines": dropped,
        **({"continued_in": continued_in} if continued_in else {}),
        "time": _now(),
    }
    atomic_write_text(path, "".join(f"{x}\n" for x in [*kept, json.dumps(event)]))
    return dropped


def run_loss(history: list[dict[str, Any]]) -> float:
    """Mean training loss over every step of the run, from the logged windows of
    ``log_history`` (each window's mean loss weighted by its steps); NaN when none logged."""
    total, last = 0.0, 0
    for h in history:
        if "loss" in h and "step" in h and int(h["step"]) > last:
            total += float(h["loss"]) * (int(h["step"]) - last)
            last = int(h["step"])
    return total / last if last else float("nan")


def peak_rss_bytes() -> int:
    """This process's peak resident set size so far (``getrusage``: kilobytes on Linux)."""
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def rss_bytes() -> int:
    """This process's resident set size now (``/proc/self/statm``; the peak from ``getrusage``
    where that file is missing)."""
    try:
        statm = Path("/proc/self/statm").read_text(encoding="ascii")
        return int(statm.split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


class ProgressLog(TrainerCallback):
    """Log lines and JSON lines of the training progress (see the module docstring)."""

    def __init__(self, path: Path, *, save_steps: int) -> None:
        self.path = path
        self.save_steps = save_steps
        self.t0 = time.perf_counter()
        self.step0 = 0
        self.step_cpu0 = 0.0
        self.window_cpu = 0.0

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.t0 = time.perf_counter()
        self.step0 = state.global_step

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.step_cpu0 = time.process_time()

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        self.window_cpu += time.process_time() - self.step_cpu0
        if state.global_step % self.save_steps == 0 or state.global_step >= state.max_steps:
            control.should_log = True
        return control

    def on_log(
        self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kw: Any
    ) -> None:
        if not state.is_world_process_zero or not logs:
            return
        step, total = int(state.global_step), int(state.max_steps)
        rec: dict[str, Any] = {"step": step, "max_steps": total, "epoch": round(state.epoch, 4)}
        if "loss" not in logs:
            runtime = logs.get("train_runtime")
            rec = {"event": "end", **rec, "runtime_s": runtime, "time": _now()}
            self._append(rec)
            log.info(
                "training stopped at step %d/%d (%.0f s in this run)", step, total, runtime or 0
            )
            return
        rec.update({k: v for k, v in logs.items() if k != "epoch"})
        done = step - self.step0
        per_step = (time.perf_counter() - self.t0) / done if done > 0 else None
        eta = None if per_step is None else per_step * max(total - step, 0)
        rec["s_per_step"] = None if per_step is None else round(per_step, 4)
        rec["eta_s"] = None if eta is None else round(eta, 1)
        rec["cpu_s"] = round(self.window_cpu, 3)  # the window's steps only (module docstring)
        self.window_cpu = 0.0
        rss, peak = rss_bytes() / 2**30, peak_rss_bytes() / 2**30
        rec["rss_gb"] = round(rss, 3)
        rec["peak_rss_gb"] = round(peak, 3)  # the step's working set: RSS between steps is less
        rec["time"] = _now()
        self._append(rec)
        parts = ", ".join(f"{k} {logs[k]:.4f}" for k in ("fit", "consistency") if k in logs)
        log.info(
            "step %d/%d (epoch %.2f): loss %.4f%s, %s s/step, ETA %s, RSS %.1f GB (peak %.1f GB)",
            step,
            total,
            state.epoch,
            logs["loss"],
            f" ({parts})" if parts else "",
            "?" if per_step is None else f"{per_step:.2f}",
            "?" if eta is None else str(timedelta(seconds=round(eta))),
            rss,
            peak,
        )

    def _append(self, rec: dict[str, Any]) -> None:
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(rec, default=str) + "\n")


def training_cost(path: Path) -> dict[str, Any]:
    """A run's cost from its ``train_log.jsonl``: the last step, and the CPU seconds and
    prompt tokens summed over its step lines (None where a line predates the field: a run
    logged before it was kept)."""
    steps = [
        r
        for r in (json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x)
        if "event" not in r
    ]
    out: dict[str, Any] = {"steps": max((int(r["step"]) for r in steps), default=0)}
    for key in ("cpu_s", "tokens"):
        have = [r.get(key) for r in steps]
        out[key] = None if not have or None in have else round(sum(have), 3)
    return out
