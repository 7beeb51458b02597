"""Losses of the four student variants, as pure functions of candidate-aligned score tensors.

Shapes: Q queries in a batch, V views (presentations) of each, N candidate columns (the longest
list in the batch; shorter lists are padded). ``scores[q, v, d]`` is the student's E[g] for
candidate d of query q read at the slot d occupied in view v; ``target[q, d]`` the silver score;
``mask[q, d]`` is True for real candidates and False for padding.

Reduction: every query weighs the same, whatever its list length. A term is the mean over the
query's real candidates, then the mean over the queries that have any. Padding never enters a
sum (its values are replaced by 0 before squaring, so even NaN or inf padding contributes
nothing and gets a zero gradient), and a batch's loss is the mean of its queries' losses.

* fit: :func:`masked_mse`, averaged over the V views;
* consistency (OC-SFT): ``mean_d (s_A(d) − s_B(d))²`` for the views A, B, averaged over all
  view pairs when V > 2; exactly 0 when the views are the same presentation;
* total = fit + λ · consistency.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import torch

__all__ = ["LossParts", "consistency", "masked_mse", "readout_loss"]


def _per_query_mean(sq: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of ``sq`` over each query's real candidates, then over queries that have any."""
    m = mask.to(sq.dtype)
    counts = m.sum(dim=-1)
    per_query = (torch.where(mask, sq, torch.zeros_like(sq))).sum(dim=-1) / counts.clamp(min=1)
    has = counts > 0
    if not bool(has.any()):
        return sq.new_zeros(())
    return per_query[has].mean()


def masked_mse(pred: torch.Tensor, target: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Squared error over real candidates: per query mean, then mean over queries. (Q, N) in."""
    if pred.shape != target.shape or pred.shape != mask.shape:
        raise ValueError(
            f"shapes differ: pred {pred.shape}, target {target.shape}, mask {mask.shape}"
        )
    diff = torch.where(mask, pred - target, torch.zeros_like(pred))
    return _per_query_mean(diff * diff, mask)


def consistency(a: torch.Tensor, b: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``mean_d (a(d) − b(d))²`` over real candidates, per query, then mean over queries."""
    return masked_mse(a, b, mask)


@dataclass(frozen=True)
class LossParts:
    """The total loss and its two terms (detached copies are for logging)."""

    total: torch.Tensor
    fit: torch.Tensor
    consistency: torch.Tensor


def readout_loss(
    scores: torch.Tensor, target: torch.Tensor, mask: torch.Tensor, lambda_: float = 0.0
) -> LossParts:
    """fit (mean over views of :func:`masked_mse`) + λ · consistency (mean over view pairs).

    ``scores`` (Q, V, N), ``target`` and ``mask`` (Q, N).
    """
    if scores.dim() != 3:
        raise ValueError(f"scores must be (queries, views, candidates), got {tuple(scores.shape)}")
    target = target.to(scores.dtype)
    views = scores.shape[1]
    fit = torch.stack([masked_mse(scores[:, v], target, mask) for v in range(views)]).mean()
    if views >= 2:
        pairs = list(itertools.combinations(range(views), 2))
        cons = torch.stack([consistency(scores[:, i], scores[:, j], mask) for i, j in pairs]).mean()
    else:
        cons = scores.new_zeros(())
    total = fit + lambda_ * cons if lambda_ else fit
    return LossParts(total=total, fit=fit, consistency=cons)
