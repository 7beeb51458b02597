"""Run a judge study: every config into one folder each, resumably (``presdep study judge``,
``scripts/judge_study.py``); :mod:`~presentation_dependence.studies.judge_study` reads what it writes.

* Each config runs into ``<root>/<config id>/``: ``presdep judge`` (or ``task: rank``); a config
  whose id starts with ``noise-`` runs ``presdep noise`` instead (its ``noise`` block).
* A folder that already holds a finished run (``summary.json``, ``ranking_summary.json`` or
  ``noise.json``) is skipped, so an interrupted study resumes at the first unfinished config.
* ``rerun``: judge the same calls once more at the configured batch size and compare with the
  sweep (``<folder>/rerun/``, the sweep reused as run 0): the rerun noise in SE units.
  ``rerun_items``: rerun only the calls of the sweep's first N items (a four-way set's sweep
  is 24 calls an item; the noise is then measured on that share, and the table says so).
* ``gate``: ``presdep gate`` on the config's cases (its ``gate`` block) ->
  ``<folder>/gate_verdict.json``; its calls are cached in ``<folder>/gate_cache/`` (unless the
  block names a ``cache_dir``), so an interrupted gate resumes. The sweep's records are its
  calls at repeat 0 and the rerun's its calls at repeat 1 (same judge, same config, same calls),
  so the gate judges only the calls beyond them (:func:`_known_calls`): with ``k: 3`` and a
  rerun of every item, a third of its calls.
* Each phase of a config that runs here (``<id> run``, ``<id> rerun``, ``<id> gate``) appends
  its wall seconds to the study's timing record, ``<root>/steps.jsonl`` (:mod:`.timing`, the
  sequencer's); the run's whole cost, over resumes and processes, with the CPU seconds a busy
  shared machine does not distort, is in ``unit_costs.jsonl``
  (:mod:`~presentation_dependence.runners.costs`).
* Processes may share a study (each part is claimed by one). Where a rerun or a gate follows
  the run, a process that finds the run's last parts (or the rerun's, before a gate) held by
  another waits for them, so both go on to the rerun together; without one it leaves the rest
  of the config to the other. The gate is run by one process (claimed as a whole): one that
  finds it claimed leaves it to the holder.
* ``archive_to``: a process that finishes a config (its run, and the rerun and the gate when
  asked for) copies the folder's summaries into ``archive_to/<id>/``
  (:func:`~presentation_dependence.studies.archive.archive_summaries`); one that leaves the
  config to another does not, so no half-finished run is archived.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from presentation_dependence.judge.config import JudgeTaskConfig, NoiseConfig, load_judge_config
from presentation_dependence.judge.items.records import JudgeRecord, read_records
from presentation_dependence.judge.runner import (
    judge_requests,
    run_gate_task,
    run_judge_task,
    run_noise_task,
)
from presentation_dependence.judge.sweep import NoiseCondition, noise_run_dir
from presentation_dependence.runners.costs import UnitClock
from presentation_dependence.runners.run_folder import RunFolder
from presentation_dependence.studies.archive import archive_summaries
from presentation_dependence.studies.timing import STEPS, record_step

__all__ = ["DONE", "run_judge_study", "run_study_config", "study_configs"]

log = logging.getLogger(__name__)
DONE = ("summary.json", "ranking_summary.json", "noise.json")
LANE = "main"  # the timing record's lane of a phase (a plan step that runs the study has its own)


def study_configs() -> list[Path]:
    """``configs/judge/study/*.yaml`` of the checkout (or of the installed package)."""
    from presentation_dependence.resources import data_root

    return sorted((data_root() / "configs" / "judge" / "study").glob("*.yaml"))


def _done(folder: Path) -> bool:
    return any((folder / name).is_file() for name in DONE)


def _timed(folder: Path, what: str, fn: Callable[[], object]) -> None:
    """Run ``fn``; append its wall seconds to the study's timing record (``<id> <what>``) and
    log them with its CPU seconds (this process, all threads)."""
    clock = UnitClock()
    fn()
    secs, cpu = clock.elapsed()
    record_step(folder.parent / STEPS, f"{folder.name} {what}", LANE, secs)
    log.info("%s %s: %.1f s wall, %.1f s CPU", folder.name, what, secs, cpu)


def run_study_config(
    cfg: JudgeTaskConfig,
    root: Path,
    argv: Sequence[str],
    *,
    rerun: bool,
    gate: bool,
    rerun_items: int | None = None,
    archive_to: Path | None = None,
) -> bool:
    """One config of the study into ``root/<id>/`` (skipped when finished); archived into
    ``archive_to`` by the process that finishes it. True when the config is finished."""
    out = root / cfg.id
    finished = _run_config(cfg, out, argv, rerun=rerun, gate=gate, rerun_items=rerun_items)
    if finished and archive_to is not None:
        archive_summaries([out], archive_to)
    return finished


def _run_config(
    cfg: JudgeTaskConfig,
    out: Path,
    argv: Sequence[str],
    *,
    rerun: bool,
    gate: bool,
    rerun_items: int | None,
) -> bool:
    """:func:`run_study_config`'s work; False when another process still judges parts."""
    wait = cfg.task == "judge" and (rerun or gate)  # then join the other process in what follows
    if _done(out):
        log.info("%s: finished run found, skipped", out)
    elif cfg.id.startswith("noise-"):
        _timed(out, "run", lambda: run_noise_task(cfg, out, argv))
    else:
        _timed(out, "run", lambda: run_judge_task(cfg, out, argv, wait=wait))
    if not _done(out):  # another process sharing the folder still judges parts
        log.info("%s: parts still judged by another process; it finishes the run", out)
        return False
    if cfg.task != "judge" or cfg.id.startswith("noise-"):
        return True
    if rerun and not _done(out / "rerun"):
        bs = getattr(cfg.judge.options, "batch_size", 1)
        one = replace(cfg, noise=NoiseConfig(repeats=2, batch_sizes=[bs]))
        if rerun_items is not None and (
            cfg.data.max_items is None or cfg.data.max_items > rerun_items
        ):
            one = replace(one, data=replace(cfg.data, max_items=rerun_items))
        sweep = read_records(out / "records.jsonl")  # fails early on a damaged sweep
        keys = {(r.item.item_id, r.placement) for r in judge_requests(one)[1]}
        ref = [r for r in sweep if (r.item_id, r.placement) in keys]
        _timed(
            out,
            "rerun",
            lambda: run_noise_task(one, out / "rerun", argv, reference=ref, wait=gate),
        )
        if not _done(out / "rerun"):
            log.info("%s: rerun parts still judged by another process", out)
            return False
    if gate and not (out / "gate_verdict.json").is_file():
        with RunFolder(out).claim("gate") as held:
            if not held:
                log.info("%s: the gate is run by another process", out)
                return False
            if not (out / "gate_verdict.json").is_file():  # another may have finished it since
                cache = cfg.gate.cache_dir or str(out / "gate_cache")
                gated = replace(cfg, gate=replace(cfg.gate, cache_dir=cache))
                known = _known_calls(cfg, out)
                _timed(
                    out,
                    "gate",
                    lambda: run_gate_task(gated, out / "gate_verdict.json", argv, known=known),
                )
    return not gate or (out / "gate_verdict.json").is_file()


def _known_calls(cfg: JudgeTaskConfig, out: Path) -> list[JudgeRecord]:
    """The calls a finished config already made: the sweep (repeat 0) and, when its rerun ran at
    the configured batch size, the rerun's second run (repeat 1)."""
    known = read_records(out / "records.jsonl")
    bs = getattr(cfg.judge.options, "batch_size", 1)
    rerun = out / "rerun" / f"{noise_run_dir(NoiseCondition(bs).name, 1)}.jsonl"
    if rerun.is_file():
        known += read_records(rerun)
    return known


def run_judge_study(
    paths: Sequence[str | Path],
    root: str | Path,
    *,
    overrides: Sequence[str] = (),
    argv: Sequence[str] = (),
    rerun: bool = False,
    gate: bool = False,
    rerun_items: int | None = None,
    archive_to: str | Path | None = None,
) -> list[Path]:
    """Every config of ``paths`` (default :func:`study_configs`), all validated before the first
    runs; the run folders, in order."""
    chosen = list(paths) or study_configs()
    configs = [load_judge_config(path, overrides) for path in chosen]
    for cfg in configs:
        run_study_config(
            cfg,
            Path(root),
            argv,
            rerun=rerun,
            gate=gate,
            rerun_items=rerun_items,
            archive_to=None if archive_to is None else Path(archive_to),
        )
    return [Path(root) / cfg.id for cfg in configs]
