"""Resumable judge output folders: the frozen config check and the sweep written in parts.

``freeze_judge_config`` writes ``resolved_config.yaml`` (redacted) and refuses an ``--out``
folder holding results of a different config (a folder without results takes the new one).

``judge_in_parts`` judges the requests in *parts* and writes each part atomically to
``records_parts/partNNNNN.jsonl`` as soon as it is judged, so a killed sweep loses at most the
part in flight and a rerun judges only the parts that are missing. A part holds whole items and
ends on a multiple of the judge's batch size, so every ``generate`` call sees exactly the
prompts it sees in one uninterrupted sweep and the records are byte-identical: with batch size
1 (or a batch size dividing the placements per item) a part is one item. The judge's identity
(model snapshot, prompt, parser, seed) is kept in ``records_parts/identity.json``; parts of
another identity are refused.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path

import yaml

from presentation_dependence.errors import ConfigError, PresdepError
from presentation_dependence.io.atomic import atomic_write_text
from presentation_dependence.judge.base import Judge
from presentation_dependence.judge.config import JudgeTaskConfig, config_from_raw
from presentation_dependence.judge.records import (
    JudgeRecord,
    JudgeRequest,
    read_records,
    write_records,
)
from presentation_dependence.secrets import redact

__all__ = ["PARTS_DIR", "freeze_judge_config", "judge_in_parts", "parts"]

log = logging.getLogger(__name__)

PARTS_DIR = "records_parts"
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


def parts(requests: Sequence[JudgeRequest], batch_size: int) -> list[tuple[int, int]]:
    """``[(start, end)]`` slices of ``requests``: each ends at an item boundary that is a
    multiple of ``batch_size`` (or at the end)."""
    bs = max(1, batch_size)
    out, start = [], 0
    for i in range(1, len(requests) + 1):
        boundary = i == len(requests) or requests[i].item.item_id != requests[i - 1].item.item_id
        if boundary and (i % bs == 0 or i == len(requests)):
            out.append((start, i))
            start = i
    return out


def _batch_size(judge: Judge) -> int:
    opts = getattr(judge, "options", None)
    if getattr(opts, "one_at_a_time", False):
        return 1
    bs = getattr(opts, "batch_size", 1)
    return bs if isinstance(bs, int) and bs >= 1 else 1


def judge_in_parts(
    judge: Judge, requests: Sequence[JudgeRequest], folder: Path
) -> list[JudgeRecord]:
    """Every request's record, in order; parts already on disk are reused (module docstring)."""
    identity = judge.identity().to_dict()
    ident_path = folder / "identity.json"
    if ident_path.exists():
        old = json.loads(ident_path.read_text(encoding="utf-8"))
        if old != identity:
            raise PresdepError(
                f"{folder} holds records of another judge identity ({old}); now {identity}. "
                "Fix: use another --out (the model, prompt, parser or seed changed)"
            )
    else:
        atomic_write_text(ident_path, json.dumps(identity, indent=2) + "\n")
    slices = parts(requests, _batch_size(judge))
    records: list[JudgeRecord] = []
    judged = 0
    for k, (a, b) in enumerate(slices):
        path = folder / f"part{k:05d}.jsonl"
        want = [r.key for r in requests[a:b]]
        if path.exists():
            recs = read_records(path)
            if [r.key for r in recs] != want:
                raise PresdepError(
                    f"{path} holds other requests than part {k} of this sweep (the data or the "
                    "placements changed). Fix: use another --out"
                )
        else:
            recs = judge.judge(requests[a:b])
            write_records(path, recs)
            judged += len(recs)
        records.extend(recs)
    log.info(
        "%d requests in %d parts: %d judged now, %d reused from %s",
        len(requests),
        len(slices),
        judged,
        len(requests) - judged,
        folder,
    )
    return records
