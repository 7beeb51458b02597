"""Judge tasks end to end: load, place, judge, score, write (``presdep judge | noise | gate``).

Output folder (``--out``, default ``<output_root>/<id>/<UTC timestamp>/``): a run folder
(:class:`~presentation_dependence.runners.run_folder.RunFolder`): ``resolved_config.yaml``
(frozen: a folder holding results of a different config is refused, with the diff),
``provenance.json`` (``{"invocations": [...]}``: argv, packages, seeds, the judge's identity and
description, one record per command run in the folder), ``run.log``, and per command:

* ``judge``: ``records_parts/`` (the sweep written part by part: the resume unit,
  :func:`~presentation_dependence.judge.sweep.judge_in_parts`), ``records.jsonl`` (one
  :class:`JudgeRecord` per call), ``summary.json``, ``report.md``;
  for ``task: rank``: ``items/`` (one file per item: the resume unit,
  :class:`~presentation_dependence.judge.ranking.RankStage`), ``ranking_items.jsonl``,
  ``ranking_summary.json``, ``report.md``.
* ``noise``: ``noise/<condition>/run<r>/`` (that run's parts: the resume unit),
  ``noise/<condition>/run<r>.jsonl``, ``noise.json``, ``noise.md``, and the summary of run 0 of
  the first condition as ``summary.json`` (that run is a complete judge run).
* ``gate``: the JSON verdict (``--verdict``, default ``<out>/gate_verdict.json``).

Rerunning ``judge`` or ``noise`` with the same config into the same folder resumes it at the
part in flight; processes sharing the folder judge each part once, and the one that finds every
part on disk writes the outputs.

Each task reads top to bottom through the stages listed in :mod:`presentation_dependence.judge`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from presentation_dependence.errors import PresdepError
from presentation_dependence.judge.config import JudgeTaskConfig, config_from_raw
from presentation_dependence.judge.gate import GateVerdict, run_gate
from presentation_dependence.judge.items.loaders import load_response_set
from presentation_dependence.judge.items.records import (
    JudgeRecord,
    JudgeRequest,
    ResponseItem,
    read_records,
    write_records,
)
from presentation_dependence.judge.judges.base import Judge, build_judge
from presentation_dependence.judge.placement import make_requests
from presentation_dependence.judge.ranking import RankStage, ranking_summary, usable_items
from presentation_dependence.judge.report import (
    jsonable,
    noise_markdown,
    paired_tests_markdown,
    ranking_markdown,
    sweep_markdown,
)
from presentation_dependence.judge.scoring.noise import summarise_noise
from presentation_dependence.judge.scoring.settings import ScoringSettings
from presentation_dependence.judge.scoring.summary import summarise_records
from presentation_dependence.judge.sweep import (
    NoiseResult,
    judge_in_parts,
    noise_run_dir,
    run_noise,
)
from presentation_dependence.provenance import utc_now
from presentation_dependence.rerankers import build_reranker
from presentation_dependence.runners.run_folder import RunFolder, default_run_dir
from presentation_dependence.runners.stage import run_units
from presentation_dependence.secrets import redact_obj
from presentation_dependence.seeding import named_rng

__all__ = [
    "judge_requests",
    "run_gate_task",
    "run_judge_task",
    "run_noise_task",
    "run_rank_task",
]

log = logging.getLogger(__name__)


def judge_requests(cfg: JudgeTaskConfig) -> tuple[list[ResponseItem], list[JudgeRequest]]:
    """The items (exactly one correct response each) and their placements, from the config."""
    items = load_response_set(replace(cfg.data, require_one_correct=True))
    return items, make_requests(items, cfg.placement.mode, cfg.placement_seed)


def run_judge_task(
    cfg: JudgeTaskConfig,
    out: Path | None = None,
    argv: Sequence[str] | None = None,
    *,
    wait: bool = False,
) -> dict[str, Any] | None:
    """The N-way judge over every item x placement; writes records, summary and report (None
    while another process sharing the folder still judges parts; ``wait``: wait for them)."""
    if cfg.task == "rank":
        return run_rank_task(cfg, out, argv)
    folder = RunFolder(out or default_run_dir(cfg))
    with folder.logging_to_file():
        items, requests = judge_requests(cfg)
        judge = build_judge(cfg.judge.judge_class, cfg.judge.options)
        folder.freeze_config(cfg, from_raw=config_from_raw)
        log.info(
            "judging %d items x %s placements = %d calls",
            len(items),
            cfg.placement.mode,
            len(requests),
        )
        records = judge_in_parts(judge, requests, folder, **_stage_args(cfg, argv, wait))
        if records is None:
            return None
        write_records(folder.path / "records.jsonl", records)
        summary = _summary(cfg, judge, records, cfg.scoring)
        folder.write_json("summary.json", jsonable(summary), indent=2)
        folder.write_text("report.md", f"# Judge run `{cfg.id}`\n\n" + sweep_markdown(summary))
        log.info("wrote %s", folder.path)
    return summary


def run_noise_task(
    cfg: JudgeTaskConfig,
    out: Path | None = None,
    argv: Sequence[str] | None = None,
    *,
    reference: Path | Sequence[JudgeRecord] | None = None,
    wait: bool = False,
) -> dict[str, Any] | None:
    """``run_noise`` under ``cfg.noise``; writes every run, the comparisons and the report (None
    while another process sharing the folder still judges parts; ``wait``: wait for them).
    ``reference``: the records (or their file) of an earlier run of exactly these calls, reused
    as run 0."""
    folder = RunFolder(out or default_run_dir(cfg))
    with folder.logging_to_file():
        _, requests = judge_requests(cfg)
        judge = build_judge(cfg.judge.judge_class, cfg.judge.options)
        folder.freeze_config(cfg, from_raw=config_from_raw)
        nc = cfg.noise
        result = run_noise(
            judge,
            requests,
            folder,
            repeats=nc.repeats,
            batch_sizes=list(nc.batch_sizes),
            one_at_a_time=nc.one_at_a_time,
            reference=read_records(reference) if isinstance(reference, Path) else reference,
            **_stage_args(cfg, argv, wait),
        )
        if result is None:
            return None
        scoring = cfg.scoring  # what scoring takes from the config, resolved once
        noise = {"identity": judge.identity().to_dict(), **summarise_noise(result, scoring)}
        first = next(iter(result.runs))
        summary = _summary(cfg, judge, result.runs[first][0], scoring)
        _write_noise(folder, cfg.id, result, noise, summary)
        log.info("wrote %s", folder.path)
    return noise


def _write_noise(
    folder: RunFolder,
    task_id: str,
    result: NoiseResult,
    noise: Mapping[str, Any],
    summary: Mapping[str, Any],
) -> None:
    """Every run's records, ``noise.json``, ``summary.json`` (run 0 of the first condition) and
    ``noise.md``."""
    for cond, recs in result.runs.items():
        for r, rs in enumerate(recs):
            write_records(folder.path / f"{noise_run_dir(cond, r)}.jsonl", rs)
    folder.write_json("noise.json", jsonable(noise), indent=2)
    folder.write_json("summary.json", jsonable(summary), indent=2)
    first = next(iter(result.runs))
    text = (
        f"# Rerun noise `{task_id}`\n\n## Run 0 of {first}\n\n"
        + sweep_markdown(summary)
        + "\n## Reruns\n\n"
        + noise_markdown(noise)
    )
    if noise["paired_tests"]:
        text += "\n## Paired tests\n\n" + paired_tests_markdown(noise)
    folder.write_text("noise.md", text)


def run_gate_task(
    cfg: JudgeTaskConfig,
    verdict_path: Path | None = None,
    argv: Sequence[str] | None = None,
    threshold_choice: Mapping[str, Any] | None = None,
    known: Sequence[JudgeRecord] = (),
) -> GateVerdict:
    """Judge the config's cases k times and decide; writes the JSON verdict (with
    ``threshold_choice``, how the threshold was chosen, when given). ``known``: records of these
    calls the same judge already made (:func:`~presentation_dependence.judge.gate.run_gate`)."""
    if verdict_path is not None and verdict_path.is_dir():
        raise PresdepError(
            f"--verdict {verdict_path} is a folder; give a file path, e.g. "
            f"{verdict_path / 'gate_verdict.json'}"
        )
    _, cases = judge_requests(cfg)
    judge = build_judge(cfg.judge.judge_class, cfg.judge.options)
    verdict = run_gate(judge, cases, cfg.gate, known)
    path = verdict_path or default_run_dir(cfg) / "gate_verdict.json"
    out = {
        **verdict.to_dict(),
        **({"threshold_choice": dict(threshold_choice)} if threshold_choice else {}),
        "config": redact_obj(cfg.to_plain()),
        "command": redact_obj(list(argv)) if argv is not None else None,
        "time_utc": utc_now(),
    }
    RunFolder(path.parent).write_json(path.name, jsonable(out), indent=2)
    log.info("gate verdict written to %s", path)
    return verdict


def run_rank_task(
    cfg: JudgeTaskConfig, out: Path | None = None, argv: Sequence[str] | None = None
) -> dict[str, Any] | None:
    """Response ranking with the readout (``task: rank``), item by item (resumable); None while
    another process sharing the folder still ranks items."""
    folder = RunFolder(out or default_run_dir(cfg))
    with folder.logging_to_file():
        items = load_response_set(cfg.data)
        usable = usable_items(items)
        reranker = build_reranker(cfg.reranker.reranker_class, cfg.reranker.options)
        folder.freeze_config(cfg, from_raw=config_from_raw)
        rc = cfg.ranking
        stage = RankStage(
            folder,
            reranker,
            {"reranker": cfg.reranker, "ranking": rc, "seed": cfg.seed},
            num_presentations=rc.num_presentations,
            seed=cfg.seed,
            ndcg_k=rc.ndcg_k,
        )
        units = list(enumerate(usable))
        seeds = {"seed": cfg.seed}
        if not run_units(stage, folder, units, desc="rank", argv=argv, seeds=seeds).complete:
            return None
        per_item = stage.stored(units)
        summary = ranking_summary(
            per_item,
            skipped_items=len(items) - len(usable),
            num_presentations=rc.num_presentations,
            ndcg_k=rc.ndcg_k,
            rng=named_rng(cfg.seed, "rank-summary"),
            n_resamples=cfg.bootstrap_resamples,
            confidence=cfg.confidence,
        )
        folder.write_text(
            "ranking_items.jsonl", "".join(json.dumps(jsonable(r)) + "\n" for r in per_item)
        )
        folder.write_json("ranking_summary.json", jsonable(summary), indent=2)
        text = f"# Response ranking `{cfg.id}`\n\n" + ranking_markdown(summary)
        folder.write_text("report.md", text)
        log.info("wrote %s", folder.path)
    return summary


def _summary(
    cfg: JudgeTaskConfig,
    judge: Judge,
    records: Sequence[JudgeRecord],
    scoring: ScoringSettings,
) -> dict[str, Any]:
    """``summary.json`` of one run: the record statistics, the judge and the placements."""
    summary = summarise_records(records, scoring)
    summary["identity"] = judge.identity().to_dict()
    summary["placement"] = {"mode": cfg.placement.mode, "seed": cfg.placement_seed}
    return summary


def _stage_args(cfg: JudgeTaskConfig, argv: Sequence[str] | None, wait: bool) -> dict[str, Any]:
    """What the judge's parts stage gets: the config blocks the records depend on, the command
    line, the seeds (provenance) and whether to wait for parts other processes hold."""
    seeds = {"seed": cfg.seed, "placement_seed": cfg.placement_seed}
    return {
        "config": {"judge": cfg.judge},
        "argv": argv,
        "seeds": seeds,
        "wait_for_others": wait,
    }
