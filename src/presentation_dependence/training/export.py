"""Publish a trained student: ``presdep student export RUN_DIR --name NAME``.

A finished training folder (``adapter/``, ``resolved_config.yaml``, ``provenance.json``) becomes
a shipped student under ``students/NAME/`` (:mod:`presentation_dependence.readout.students`):

1. the adapter's floating tensors are stored in the smallest dtype of ``dtypes`` that keeps the
   expected grades within ``tolerance`` of the trained adapter's: the first
   ``check_queries`` queries of the config's test split, given order, are scored with both
   (the dtype check, recorded in the manifest with its maximum |ΔE[g]|);
2. ``adapter_config.json`` names the base by the toolkit's model name (the trained folder
   records a path of the machine that trained it);
3. ``student.json`` records the adapter's sha256, the base model's revision, the serving block,
   how it was trained (recipe, λ, steps, seed, teacher and calibration, pool, commit) and the
   training data's licences; ``README.md`` is the model card written from it.

The folder is built beside its destination and renamed into place, so a failed export leaves
the previous student (or nothing) behind.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from presentation_dependence.data.loaders import load_dataset
from presentation_dependence.errors import ConfigError, PresdepError
from presentation_dependence.io.atomic import atomic_write_text
from presentation_dependence.models.embedded import resolve_model
from presentation_dependence.presentations import score_presentations
from presentation_dependence.provenance import cpu_label
from presentation_dependence.readout.adapter import ADAPTER_CONFIG, ADAPTER_FILES, adapter_sha256
from presentation_dependence.readout.students import MANIFEST, ShippedStudent, read_manifest
from presentation_dependence.rerankers import build_reranker
from presentation_dependence.runners.readback import read_provenance
from presentation_dependence.training.card import render_card
from presentation_dependence.training.config import TrainingConfig, read_folder_config
from presentation_dependence.training.model import TRAINING_CPU_DTYPE
from presentation_dependence.training.pool import POOL_LICENCES

__all__ = ["DTYPES", "export_student", "write_manifest"]

log = logging.getLogger(__name__)

DTYPES = ("bfloat16", "float16", "float32")  # smallest first
WEIGHTS = ADAPTER_FILES[1]


def write_manifest(folder: str | Path, student: ShippedStudent) -> Path:
    path = Path(folder) / MANIFEST
    atomic_write_text(path, json.dumps(student.to_json(), indent=2, ensure_ascii=False) + "\n")
    return path


def cast_adapter(src: Path, dst: Path, dtype: str, base_model: str) -> None:
    """Copy the adapter folder ``src`` to ``dst``, floating tensors cast to ``dtype``."""
    import torch
    from safetensors.torch import load_file, save_file

    dst.mkdir(parents=True, exist_ok=True)
    tensors = load_file(str(src / WEIGHTS))
    target = getattr(torch, dtype)
    cast = {
        k: (v.to(target) if v.is_floating_point() else v).contiguous() for k, v in tensors.items()
    }
    save_file(cast, str(dst / WEIGHTS), metadata={"format": "pt"})
    config = json.loads((src / ADAPTER_CONFIG).read_text(encoding="utf-8"))
    config["base_model_name_or_path"] = base_model
    (dst / ADAPTER_CONFIG).write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")


def _requests(cfg: TrainingConfig, k: int) -> list[Any]:
    """The dtype check's queries: the first ``k`` of the test split, else of the held-out
    split, else of the training data (a numeric check, not an evaluation)."""
    blocks = cfg.splits.test or cfg.splits.heldout or cfg.silver.data
    if not blocks:
        raise ConfigError(f"{cfg.id}: no data block to run the dtype check on")
    requests = list(load_dataset(blocks[0]).requests[:k])
    if not requests:
        raise PresdepError(f"{cfg.id}: the dtype check's data block has no query")
    return requests


def expected_grades(
    serving: Mapping[str, Any], adapter: Path, requests: Sequence[Any]
) -> np.ndarray:
    """E[g] of every candidate of ``requests`` in the given order, with ``adapter`` attached."""
    block = {k: v for k, v in serving.items() if k not in ("adapter_path", "adapter")}
    name = block.pop("reranker_class", "GradeReranker")
    reranker = build_reranker(name, **block, adapter_path=str(adapter))
    rows = [
        score_presentations(
            reranker, r.query, r.candidates, np.arange(len(r.candidates))[None, :]
        ).scores.reshape(-1)
        for r in requests
    ]
    return np.concatenate(rows)


def choose_dtype(
    cfg: TrainingConfig, src: Path, work: Path, dtypes: Sequence[str], tolerance: float, k: int
) -> tuple[str, dict[str, Any]]:
    """The first of ``dtypes`` whose adapter moves no E[g] by more than ``tolerance``."""
    requests = _requests(cfg, k)
    reference = expected_grades(cfg.student, src, requests)
    tried: dict[str, float] = {}
    for dtype in dtypes:
        trial = work / f"trial-{dtype}"
        cast_adapter(src, trial, dtype, cfg.student["model_name"])
        diff = float(np.max(np.abs(expected_grades(cfg.student, trial, requests) - reference)))
        tried[dtype] = diff
        log.info(
            "dtype check: %s moves E[g] by at most %.3g (tolerance %g)", dtype, diff, tolerance
        )
        if diff <= tolerance:
            check = {
                "reference": "the trained adapter as saved (float32)",
                "queries": [r.query.qid for r in requests],
                "presentation": "given order",
                "candidates": int(reference.size),
                "max_abs_diff_expected_grade": tried,
                "tolerance": tolerance,
            }
            return dtype, check
    raise PresdepError(
        f"no dtype of {list(dtypes)} keeps E[g] within {tolerance} (max |ΔE[g]|: {tried}); "
        "raise --tolerance or add float32"
    )


def training_record(cfg: TrainingConfig, run_dir: Path) -> dict[str, Any]:
    """How the student was trained, from its config and its last training provenance."""
    records = read_provenance(run_dir).phase("train")
    if not records or not (run_dir / "adapter").is_dir():
        raise PresdepError(f"{run_dir} holds no finished student (adapter/ and a training record)")
    rec = records[-1]
    git = rec.get("git") or {}
    return {
        "config_id": cfg.id,
        "variant": cfg.variant,
        "lambda": cfg.lambda_,
        "views": cfg.views,
        "view_orders": cfg.view_orders,
        "teacher_orders": cfg.teacher_orders,
        "loss": dict(rec.get("loss") or {}),
        "steps": rec.get("global_step"),
        "seed": cfg.seed,
        "learning_rate": cfg.train.learning_rate,
        "epochs": cfg.train.epochs,
        "lora": {
            "r": cfg.lora.r,
            "alpha": cfg.lora.alpha,
            "target_modules": list(cfg.lora.target_modules),
        },
        "teacher": dict(cfg.silver.teacher),
        "calibration": dataclasses.asdict(cfg.silver.calibration),
        "silver": rec.get("silver"),
        "pool": [str(b.path) for b in cfg.silver.data],
        "training_queries": len(rec.get("training_queries") or []),
        "training_data_sha256": rec.get("training_data_sha256"),
        "train_loss": rec.get("train_loss"),
        "commit": git.get("commit"),
        "dirty": git.get("dirty"),
        "processor": cpu_label(rec.get("cpu")),
        "resumed_from_step": rec.get("resumed_from_step"),
        "dtype": _training_dtype(cfg, rec),
        "base_revision": (rec.get("student") or {}).get("revision"),
    }


def _training_dtype(cfg: TrainingConfig, rec: Mapping[str, Any]) -> str | None:
    """The dtype the student trained in; for a run resumed in another dtype (``presdep train
    --continue-in``), the configured one up to the resumed step and the other after it."""
    ran = (rec.get("student") or {}).get("dtype")
    other = rec.get("continued_in")
    if not other:
        return ran
    configured = cfg.student_options.dtype
    configured = TRAINING_CPU_DTYPE if configured == "auto" else configured  # auto: bf16 anywhere
    step = int(rec.get("resumed_from_step") or 0)
    return f"{configured} (steps 1-{step}), {other} (from step {step + 1}: continued in {other})"


def pool_licences(cfg: TrainingConfig) -> tuple[str, ...]:
    """The licence of every pool source the silver data reads (by the pool file's stem)."""
    out = []
    for block in cfg.silver.data:
        source = Path(str(block.path)).stem.split("-")[0]
        if source in POOL_LICENCES:
            out.append(f"{source}: {POOL_LICENCES[source]}")
    return tuple(dict.fromkeys(out))


def export_student(
    run_dir: str | Path,
    name: str,
    *,
    dest_root: str | Path = "students",
    description: str = "",
    dtypes: Sequence[str] = DTYPES,
    tolerance: float = 0.01,
    check_queries: int = 3,
) -> ShippedStudent:
    """Publish the student finished in ``run_dir`` as ``dest_root/name`` (see the module)."""
    run_dir = Path(run_dir)
    cfg = read_folder_config(run_dir)
    training = training_record(cfg, run_dir)
    base = resolve_model(cfg.student["model_name"], cfg.student.get("revision"))
    if training["base_revision"] not in (None, base.revision):
        raise PresdepError(
            f"{run_dir} was trained on {cfg.student['model_name']} at revision "
            f"{training['base_revision']!r}; it resolves to {base.revision!r} here. Fix: export "
            "where the training's base model is installed"
        )
    dest = Path(dest_root) / name
    work = Path(dest_root) / f".{name}.tmp"
    shutil.rmtree(work, ignore_errors=True)
    try:
        dtype, check = choose_dtype(
            cfg, run_dir / "adapter", work, dtypes, tolerance, check_queries
        )
        shutil.move(str(work / f"trial-{dtype}"), str(work / "final"))
        final = work / "final"
        serving = {k: v for k, v in cfg.student.items() if k != "adapter_path"}
        serving["adapter"] = name
        student = ShippedStudent(
            name=name,
            description=description or f"{cfg.variant} student of {cfg.student['model_name']}",
            adapter_sha256=adapter_sha256(final),
            base_model=cfg.student["model_name"],
            base_revision=base.fingerprint(),
            stored_dtype=dtype,
            serving=serving,
            training=training,
            dtype_check=check,
            licences=pool_licences(cfg),
        )
        shutil.copyfile(run_dir / "resolved_config.yaml", final / "training_config.yaml")
        write_manifest(final, student)
        atomic_write_text(final / "README.md", render_card(student))
        read_manifest(final)  # what a loader will read
        old = Path(dest_root) / f".{name}.old"
        if dest.exists():
            dest.rename(old)
        final.rename(dest)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    log.info("exported %s (%s, sha256 %s) to %s", name, dtype, student.adapter_sha256[:16], dest)
    return student
