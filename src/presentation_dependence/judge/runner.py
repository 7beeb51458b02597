"""Judge tasks end to end: load, place, judge, score, write (``presdep judge | noise | gate``).

Output folder (``--out``, default ``<output_root>/<id>/<UTC timestamp>/``):

``resolved_config.yaml``, ``provenance.json`` (argv, packages, seeds, the judge's identity and
description), and per command:

* ``judge``: ``records_parts/`` (the sweep written part by part: the resume unit,
  :func:`~presentation_dependence.judge.sweep.judge_in_parts`), ``records.jsonl`` (one :class:`JudgeRecord`
  per call), ``summary.json``, ``report.md``;
  for ``task: rank``: ``ranking_items.jsonl``, ``ranking_summary.json``, ``report.md``.
* ``noise``: ``noise/<condition>/run<r>.jsonl``, ``noise.json``, ``noise.md``, and the summary of
  run 0 of the first condition as ``summary.json`` (that run is a complete judge run).
* ``gate``: the JSON verdict (``--verdict``, default ``<out>/gate_verdict.json``).

An ``--out`` folder holding results of a different config is refused
(:func:`freeze_judge_config`); rerunning ``judge`` with the same config into the same folder
resumes the sweep.

Each task reads top to bottom through the stages listed in :mod:`presentation_dependence.judge`.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from presentation_dependence.errors import ConfigError, PresdepError
from presentation_dependence.io.atomic import atomic_write_text
from presentation_dependence.judge.base import Judge, build_judge
from presentation_dependence.judge.config import JudgeTaskConfig, config_from_raw
from presentation_dependence.judge.gate import GateVerdict, run_gate
from presentation_dependence.judge.loaders import load_response_set
from presentation_dependence.judge.placement import make_requests
from presentation_dependence.judge.ranking import rank_responses
from presentation_dependence.judge.records import (
    JudgeRecord,
    JudgeRequest,
    ResponseItem,
    read_records,
    write_records,
)
from presentation_dependence.judge.report import (
    compare_markdown,
    jsonable,
    noise_markdown,
    ranking_markdown,
    sweep_markdown,
)
from presentation_dependence.judge.scoring import summarise_noise, summarise_records
from presentation_dependence.judge.sweep import PARTS_DIR, judge_in_parts, run_noise
from presentation_dependence.provenance import collect_provenance, utc_now
from presentation_dependence.rerankers import build_reranker
from presentation_dependence.secrets import redact, redact_obj
from presentation_dependence.seeding import named_rng

__all__ = [
    "default_out_dir",
    "freeze_judge_config",
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
    cfg: JudgeTaskConfig, out: Path | None = None, argv: Sequence[str] | None = None
) -> dict[str, Any]:
    """The N-way judge over every item x placement; writes records, summary and report."""
    if cfg.task == "rank":
        return run_rank_task(cfg, out, argv)
    out = out or default_out_dir(cfg)
    items, requests = judge_requests(cfg)
    judge = _judge(cfg)
    _start(cfg, out, argv, judge)
    log.info(
        "judging %d items x %s placements = %d calls", len(items), cfg.placement.mode, len(requests)
    )
    records = judge_in_parts(judge, requests, out / PARTS_DIR)
    write_records(out / "records.jsonl", records)
    summary = _summary(cfg, judge, records)
    write_json(out / "summary.json", summary)
    atomic_write_text(out / "report.md", f"# Judge run `{cfg.id}`\n\n" + sweep_markdown(summary))
    log.info("wrote %s", out)
    return summary


def run_noise_task(
    cfg: JudgeTaskConfig,
    out: Path | None = None,
    argv: Sequence[str] | None = None,
    *,
    reference: Path | None = None,
) -> dict[str, Any]:
    """``run_noise`` under ``cfg.noise``; writes every run, the comparisons and the report."""
    out = out or default_out_dir(cfg)
    _, requests = judge_requests(cfg)
    judge = _judge(cfg)
    _start(cfg, out, argv, judge)
    nc = cfg.noise
    result = run_noise(
        judge,
        requests,
        repeats=nc.repeats,
        batch_sizes=list(nc.batch_sizes),
        one_at_a_time=nc.one_at_a_time,
        reference=read_records(reference) if reference is not None else None,
        confidence=cfg.confidence,
    )
    for cond, recs in result.runs.items():
        for r, rs in enumerate(recs):
            write_records(out / "noise" / cond.replace("=", "") / f"run{r}.jsonl", rs)
    first = next(iter(result.runs))
    noise = {
        "identity": judge.identity().to_dict(),
        **summarise_noise(
            result.runs,
            result.seconds,
            result.comparisons,
            seed=cfg.seed,
            n_resamples=cfg.bootstrap_resamples,
            confidence=cfg.confidence,
        ),
    }
    summary = _summary(cfg, judge, result.runs[first][0])
    write_json(out / "noise.json", noise)
    write_json(out / "summary.json", summary)
    text = (
        f"# Rerun noise `{cfg.id}`\n\n## Run 0 of {first}\n\n"
        + sweep_markdown(summary)
        + "\n## Reruns\n\n"
        + noise_markdown(noise)
    )
    if noise["paired_tests"]:
        text += "\n## Paired tests\n\n" + "".join(
            compare_markdown(p["a"], p["b"], p) for p in noise["paired_tests"]
        )
    atomic_write_text(out / "noise.md", text)
    log.info("wrote %s", out)
    return noise


def run_gate_task(
    cfg: JudgeTaskConfig, verdict_path: Path | None = None, argv: Sequence[str] | None = None
) -> GateVerdict:
    """Judge the config's cases k times and decide; writes the JSON verdict."""
    if verdict_path is not None and verdict_path.is_dir():
        raise PresdepError(
            f"--verdict {verdict_path} is a folder; give a file path, e.g. "
            f"{verdict_path / 'gate_verdict.json'}"
        )
    _, cases = judge_requests(cfg)
    judge = _judge(cfg)
    verdict = run_gate(judge, cases, cfg.gate)
    path = verdict_path or default_out_dir(cfg) / "gate_verdict.json"
    write_json(
        path,
        {
            **verdict.to_dict(),
            "config": redact_obj(cfg.to_plain()),
            "command": redact_obj(list(argv)) if argv is not None else None,
            "time_utc": utc_now(),
        },
    )
    log.info("gate verdict written to %s", path)
    return verdict


def run_rank_task(
    cfg: JudgeTaskConfig, out: Path | None = None, argv: Sequence[str] | None = None
) -> dict[str, Any]:
    """Response ranking with the readout (``task: rank``)."""
    out = out or default_out_dir(cfg)
    items = load_response_set(cfg.data)
    reranker = build_reranker(cfg.reranker.reranker_class, cfg.reranker.options)
    freeze_judge_config(cfg, out)
    per_item, summary = rank_responses(
        items,
        reranker,
        num_presentations=cfg.ranking.num_presentations,
        seed=cfg.seed,
        ndcg_k=cfg.ranking.ndcg_k,
        rng=named_rng(cfg.seed, "rank-summary"),
        n_resamples=cfg.bootstrap_resamples,
        confidence=cfg.confidence,
    )
    prov = collect_provenance(
        argv=argv, seeds={"seed": cfg.seed}, extra={"reranker": reranker.describe()}
    )
    atomic_write_text(out / "provenance.json", redact(json.dumps(jsonable(prov), indent=2)) + "\n")
    atomic_write_text(
        out / "ranking_items.jsonl", "".join(json.dumps(jsonable(r)) + "\n" for r in per_item)
    )
    write_json(out / "ranking_summary.json", summary)
    atomic_write_text(
        out / "report.md", f"# Response ranking `{cfg.id}`\n\n" + ranking_markdown(summary)
    )
    log.info("wrote %s", out)
    return summary


def _judge(cfg: JudgeTaskConfig) -> Judge:
    return build_judge(cfg.judge.judge_class, cfg.judge.options)


def _summary(cfg: JudgeTaskConfig, judge: Judge, records: Sequence[JudgeRecord]) -> dict[str, Any]:
    """``summary.json`` of one run: the record statistics, the judge and the placements."""
    summary = summarise_records(
        records,
        rng=named_rng(cfg.seed, "judge-summary"),
        n_resamples=cfg.bootstrap_resamples,
        confidence=cfg.confidence,
    )
    summary["identity"] = judge.identity().to_dict()
    summary["placement"] = {"mode": cfg.placement.mode, "seed": cfg.placement_seed}
    return summary


def default_out_dir(cfg: JudgeTaskConfig) -> Path:
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return Path(cfg.output_root) / cfg.id / stamp


def write_json(path: Path, obj: Any) -> None:
    atomic_write_text(path, json.dumps(jsonable(obj), indent=2, ensure_ascii=False) + "\n")


def _start(cfg: JudgeTaskConfig, out: Path, argv: Sequence[str] | None, judge: Any) -> None:
    freeze_judge_config(cfg, out)
    prov = collect_provenance(
        argv=argv,
        seeds={"seed": cfg.seed, "placement_seed": cfg.placement_seed},
        extra={"judge": judge.describe()},
    )
    atomic_write_text(out / "provenance.json", redact(json.dumps(jsonable(prov), indent=2)) + "\n")


_NOT_RESULTS = frozenset({"resolved_config.yaml", "provenance.json"})


def _same_config(old_yaml: str, cfg: JudgeTaskConfig) -> bool:
    try:
        return bool(config_from_raw(yaml.safe_load(old_yaml) or {}, cfg.id) == cfg)
    except (PresdepError, yaml.YAMLError, TypeError, ValueError):
        return False


def _has_results(out: Path) -> bool:
    return out.is_dir() and any(
        p.is_file() and p.relative_to(out).as_posix() not in _NOT_RESULTS for p in out.rglob("*")
    )


def freeze_judge_config(cfg: JudgeTaskConfig, out: Path) -> None:
    """Write ``out/resolved_config.yaml``; refuse a folder with results of another config."""
    path = out / "resolved_config.yaml"
    text = redact(cfg.to_yaml())
    if path.exists():
        old = path.read_text(encoding="utf-8")
        if old == text or _same_config(old, cfg):
            return
        if _has_results(out):
            raise ConfigError(
                f"{path} was written by a different config, so the results in {out} cannot be "
                "reused or overwritten. Fix: use another --out, or rerun with the same config"
            )
        log.warning("%s holds no results yet: replacing its config with this one", out)
    atomic_write_text(path, text)
