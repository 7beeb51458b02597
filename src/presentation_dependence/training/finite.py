"""Training stops at the first non-finite number, and nothing non-finite is ever saved.

One NaN or Infinity (a label, a corrupted checkpoint, a diverging step) spreads to every weight
it reaches, and the Trainer's log hides it (``logging_nan_inf_filter`` logs the running mean in
place of a NaN loss). So:

* :func:`require_finite_loss` checks the readout loss of every step before its backward pass
  (:class:`~.readout_trainer.ReadoutTrainer`): a non-finite loss stops training, naming the
  step and whether that batch's labels were finite;
* :func:`require_finite_weights` checks the trained weights before every save: each checkpoint
  (``ReadoutTrainer.save_model``) and the final adapter (:mod:`.trainer`);
* :func:`non_finite_tensors` names the non-finite tensors of a saved weights file (a checkpoint
  is checked before training resumes from it: :func:`.resume.check_resumable`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from presentation_dependence.errors import PresdepError

__all__ = ["non_finite_tensors", "require_finite_loss", "require_finite_weights"]


def non_finite_tensors(tensors: Mapping[str, torch.Tensor]) -> list[str]:
    """The names of the floating-point tensors that hold a NaN or an Infinity, in order."""
    return [
        name
        for name, t in tensors.items()
        if t.is_floating_point() and not bool(torch.isfinite(t.detach()).all())
    ]


def require_finite_weights(model: Any, where: str) -> None:
    """Refuse to save ``model`` (at ``where``: a checkpoint, the adapter) when a trained
    weight holds a NaN or an Infinity."""
    trained = {n: p for n, p in model.named_parameters() if p.requires_grad}
    bad = non_finite_tensors(trained)
    if bad:
        raise PresdepError(
            f"{len(bad)} of {len(trained)} trained weight tensors hold NaN or Infinity (e.g. "
            f"{bad[0]}), so {where} is not saved. Fix: see train_log.jsonl for the step where "
            "the loss or grad_norm left the finite range; lower train.learning_rate (or set "
            "train.max_grad_norm), check the silver labels, and rerun with --restart"
        )


def require_finite_loss(
    loss: torch.Tensor, step: int, labels: torch.Tensor, parts: Mapping[str, float]
) -> None:
    """Stop training at step ``step`` when its loss is not finite (before its backward pass,
    so the weights and the checkpoints saved so far stay finite)."""
    if bool(torch.isfinite(loss.detach()).all()):
        return
    terms = ", ".join(f"{k} {v:g}" for k, v in parts.items())
    head = (
        f"the readout loss of training step {step} is {float(loss.detach()):g} ({terms}): "
        "training stops before it reaches the weights; the checkpoints saved so far are kept."
    )
    if not bool(torch.isfinite(labels).all()):
        raise PresdepError(
            f"{head} The batch's silver labels hold NaN or Infinity. Fix: remake the silver "
            "file (presdep silver CONFIG --force) and rerun with --restart"
        )
    raise PresdepError(
        f"{head} The batch's labels are finite: the student diverged. Fix: lower "
        "train.learning_rate (or set train.max_grad_norm) and rerun with --restart"
    )
