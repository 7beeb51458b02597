"""Save a finished student: its weights, its serving block and its provenance record.

``<output_dir>/adapter/`` (LoRA) or ``model/`` (``finetune: full``) is written last, through a
temporary folder renamed into place, so its presence marks the folder finished; the trained
weights are checked finite first (:func:`~.finite.require_finite_weights`): a NaN student is
never saved as finished. The checkpoints go once the student is saved.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from presentation_dependence.io.atomic import atomic_write_text
from presentation_dependence.provenance import collect_provenance
from presentation_dependence.runners.run_folder import RunFolder
from presentation_dependence.training.config import TrainingConfig
from presentation_dependence.training.finite import require_finite_weights
from presentation_dependence.training.inputs import TrainingInputs
from presentation_dependence.training.judge_config import JudgeTrainingConfig
from presentation_dependence.training.model import Student
from presentation_dependence.training.readout_trainer import ReadoutTrainer
from presentation_dependence.training.resume import CHECKPOINTS
from presentation_dependence.training.silver import SilverSet

__all__ = ["save_student", "student_provenance"]


def _write_serving_block(
    cfg: TrainingConfig | JudgeTrainingConfig, out: Path, adapter: Path
) -> None:
    """``reranker.yaml`` (a student) or ``judge.yaml`` (a trained judge): the block that serves
    the trained weights."""
    if isinstance(cfg, JudgeTrainingConfig):
        name, block = "judge.yaml", cfg.serving_block(adapter)
        head = (
            "# serve this judge: paste as a judge config's judge block, or run\n"
            f"# presdep judge CONFIG --override judge.adapter_path={adapter}\n"
        )
    else:
        if cfg.finetune == "full":
            block = {**cfg.student, "model_name": str(adapter), "revision": None}
            how = f"--override reranker.model_name={adapter}"
        else:
            block = {**cfg.student, "adapter_path": str(adapter)}
            how = f"--override reranker.adapter_path={adapter}"
        name = "reranker.yaml"
        head = (
            "# serve this student: paste as an experiment config's reranker block, or run\n"
            f"# presdep run CONFIG {how}\n"
        )
    atomic_write_text(out / name, head + yaml.safe_dump(block, sort_keys=False))


def save_student(
    cfg: TrainingConfig | JudgeTrainingConfig,
    outcome: dict[str, Any],
    trainer: ReadoutTrainer,
    out: Path,
    tokenizer: Any = None,
) -> Path:
    """Write the student: its serving block, this training's provenance record, and the adapter
    (LoRA) or the whole model (``finetune: full``) last, ``adapter/`` (``model/``), its presence
    marks the folder finished; then delete the checkpoints."""
    full = cfg.finetune == "full"
    adapter = out / ("model" if full else "adapter")
    tmp = out / f".{adapter.name}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    model = trainer.accelerator.unwrap_model(trainer.model)
    require_finite_weights(model, f"the student in {adapter}")
    model.save_pretrained(str(tmp))
    if full and tokenizer is not None:
        tokenizer.save_pretrained(str(tmp))
    _write_serving_block(cfg, out, adapter)
    RunFolder(out).append_provenance(json.loads(json.dumps(outcome, default=str)))
    shutil.rmtree(adapter, ignore_errors=True)
    tmp.rename(adapter)
    shutil.rmtree(out / CHECKPOINTS, ignore_errors=True)
    return adapter


def student_provenance(
    cfg: TrainingConfig,
    argv: Sequence[str] | None,
    silver: SilverSet,
    inputs: TrainingInputs,
    args: Any,
    student: Student,
    slot_weights: Any,
    run: dict[str, Any],
    *,
    continued_in: str | None = None,
) -> dict[str, Any]:
    """The finished run's provenance: the config's recipe, the student, the silver files, the
    inputs' fingerprints, how it ran (``args``; ``continued_in``: the dtype this invocation
    resumed in instead of the config's), then ``run``'s figures, in that key order."""
    silver_info = [
        {
            k: h.get(k)
            for k in ("teacher_id", "teacher_revision", "num_orders", "seed", "num_queries")
        }
        for h in silver.headers
    ]
    extra = {
        "phase": "train",
        "config_id": cfg.id,
        "variant": cfg.variant,
        "teacher_orders": cfg.teacher_orders,
        "views": cfg.views,
        "view_orders": cfg.view_orders,
        "lambda": cfg.lambda_,
        "loss": dataclasses.asdict(cfg.loss),
        "finetune": cfg.finetune,
        "slot_weights": None if slot_weights is None else slot_weights.tolist(),
        "student": student.describe(),
        "silver": {"path": cfg.silver.path, "files": silver_info},
        "training_queries": [q.key for q in silver.queries],
        "training_data_sha256": inputs.data,
        "base_model_fingerprint": inputs.base,
        "world_size": args.world_size,
        "gradient_checkpointing": args.gradient_checkpointing,
        "autocast_bf16": args.bf16,
        **({"continued_in": continued_in} if continued_in else {}),
        **run,
    }
    return collect_provenance(
        argv=argv, seeds={"seed": cfg.seed, "silver_seed": cfg.silver.seed}, extra=extra
    )
