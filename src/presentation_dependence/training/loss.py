"""Losses of the four student variants, as pure functions of candidate-aligned score tensors.

Shapes: Q queries in a batch, V views (presentations) of each, N candidate columns (the longest
list in the batch; shorter lists are padded). ``scores[q, v, d]`` is the student's E[g] for
candidate d of query q read at the slot d occupied in view v; ``target[q, d]`` the silver score;
``mask[q, d]`` is True for real candidates and False for padding.

Reduction: every query weighs the same, whatever its list length. A term is the mean over the
query's real candidates, then the mean over the queries that have any. Padding never enters a
sum (its values are replaced by 0 before squaring, so even NaN or inf padding contributes
nothing and gets a zero gradient), and a batch's loss is the mean of its queries' losses.

* fit, averaged over the V views, one of
  - ``mse``: :func:`masked_mse` of E[g] against the label;
  - ``ce``: :func:`masked_grade_ce`, the cross-entropy of the slot's P(g) against the label's
    two-point grade distribution (:func:`grade_targets`: y = 1.3 puts 0.7 on grade 1 and 0.3
    on grade 2, so its expectation is y). Why offer it: E[g] is a softmax average, and once
    P(g) is peaked the squared error's gradient ``2(E − y)·P(g)(g − E)`` vanishes with the
    spread of P, while the cross-entropy's ``P − q`` does not (docs/studies/fit-diagnosis.md);
* rank (optional, weight ``rank_weight``), per view, one of (``rank_loss``)
  - ``listnet``: :func:`listnet`, the cross-entropy between softmax(label / τ) and
    softmax(E[g] / τ) over a query's candidates: the teacher as a temperature-scaled
    distribution;
  - ``listmle``: :func:`listmle`, the Plackett–Luce likelihood of the teacher's ordering of the
    list: the teacher's per-list order, not its values;
* consistency (OC-SFT): ``mean_d (s_A(d) − s_B(d))²`` for the views A, B, averaged over all
  view pairs when V > 2; exactly 0 when the views are the same presentation;
* total = fit_weight · fit + rank_weight · rank + λ · consistency (``fit_weight`` 1 unless a
  recipe swaps the calibrated grades for the ranking term alone).

Optional ``weights[q, v, d]`` (DebiasFirst's inverse propensities) weigh the fit and rank
terms per candidate and view: the per-query mean becomes a weighted mean.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import torch

__all__ = [
    "CONSISTENCY_KINDS",
    "FIT_LOSSES",
    "RANK_LOSSES",
    "LossParts",
    "consistency",
    "grade_targets",
    "listmle",
    "listnet",
    "masked_grade_ce",
    "masked_mse",
    "readout_loss",
    "verdict_loss",
]

FIT_LOSSES = ("mse", "ce")
RANK_LOSSES = ("listnet", "listmle")


def _per_query_mean(
    values: torch.Tensor, mask: torch.Tensor, weights: torch.Tensor | None = None
) -> torch.Tensor:
    """Mean of ``values`` over each query's real candidates, then over queries that have any.

    With ``weights`` (same shape as ``values``) the per-query mean is a weighted mean.
    """
    zero = torch.zeros((), dtype=values.dtype, device=values.device)
    w = (
        mask.to(values.dtype)
        if weights is None
        else torch.where(mask, weights.to(values.dtype), zero)
    )
    counts = w.sum(dim=-1)
    per_query = torch.where(mask, values * w, zero).sum(dim=-1) / counts.clamp(min=1e-12)
    has = counts > 0
    if not bool(has.any()):
        return values.new_zeros(())
    return per_query[has].mean()


def masked_mse(
    pred: torch.Tensor,
    target: torch.Tensor,
    mask: torch.Tensor,
    weights: torch.Tensor | None = None,
) -> torch.Tensor:
    """Squared error over real candidates: per query mean, then mean over queries. (Q, N) in."""
    if pred.shape != target.shape or pred.shape != mask.shape:
        raise ValueError(
            f"shapes differ: pred {pred.shape}, target {target.shape}, mask {mask.shape}"
        )
    diff = torch.where(mask, pred - target, torch.zeros_like(pred))
    return _per_query_mean(diff * diff, mask, weights)


def grade_targets(target: torch.Tensor, num_grades: int) -> torch.Tensor:
    """The two-point distribution over grades 0..G−1 whose expectation is ``target``.

    ``y`` is clipped to [0, G−1]; mass ``1 − (y − ⌊y⌋)`` goes to ⌊y⌋ and ``y − ⌊y⌋`` to ⌊y⌋ + 1.
    (Q, N) in, (Q, N, G) out.
    """
    y = target.clamp(0, num_grades - 1)
    lo = y.floor().clamp(max=num_grades - 1)
    frac = y - lo
    lo_i = lo.long()
    hi_i = (lo_i + 1).clamp(max=num_grades - 1)
    out = torch.zeros((*y.shape, num_grades), dtype=y.dtype, device=y.device)
    out.scatter_add_(-1, lo_i.unsqueeze(-1), (1 - frac).unsqueeze(-1))
    out.scatter_add_(-1, hi_i.unsqueeze(-1), frac.unsqueeze(-1))
    return out


def masked_grade_ce(
    log_probs: torch.Tensor,
    target: torch.Tensor,
    mask: torch.Tensor,
    weights: torch.Tensor | None = None,
) -> torch.Tensor:
    """Cross-entropy of P(g) (log, (Q, N, G)) against :func:`grade_targets` of ``target``."""
    q = grade_targets(target.to(log_probs.dtype), log_probs.shape[-1])
    lp = torch.where(mask.unsqueeze(-1), log_probs, torch.zeros_like(log_probs))
    return _per_query_mean(-(q * lp).sum(dim=-1), mask, weights)


def listnet(
    scores: torch.Tensor,
    target: torch.Tensor,
    mask: torch.Tensor,
    temperature: float = 1.0,
) -> torch.Tensor:
    """ListNet top-one cross-entropy over each query's real candidates, mean over queries.

    ``−Σ_d softmax(target/τ)_d · log softmax(scores/τ)_d`` (Cao et al., ICML 2007); a query
    with fewer than two real candidates contributes nothing.
    """
    neg = torch.finfo(scores.dtype).min / 4
    s = torch.where(mask, scores / temperature, torch.full_like(scores, neg))
    t = torch.where(mask, target.to(scores.dtype) / temperature, torch.full_like(scores, neg))
    p_t = torch.softmax(t, dim=-1)
    lp_s = torch.log_softmax(s, dim=-1)
    per_query = -(torch.where(mask, p_t * lp_s, torch.zeros_like(s))).sum(dim=-1)
    has = mask.sum(dim=-1) >= 2
    if not bool(has.any()):
        return scores.new_zeros(())
    return per_query[has].mean()


def listmle(
    scores: torch.Tensor,
    target: torch.Tensor,
    mask: torch.Tensor,
    temperature: float = 1.0,
) -> torch.Tensor:
    """ListMLE (Xia et al., ICML 2008): the Plackett–Luce negative log-likelihood of the order
    ``target`` gives a query's real candidates, under ``scores / τ``; per query the mean over its
    positions, then the mean over the queries with two or more real candidates.

    With π the candidates sorted by target, descending: ``(1/n) Σ_i [log Σ_{j≥i} exp(s_π(j)/τ)
    − s_π(i)/τ]``. Only the target's order counts, not its values, so a monotone calibration of
    the teacher changes nothing. Ties in the target keep the input (first-stage) order: use
    ListNet for labels with many ties (gold grades).
    """
    neg = torch.finfo(scores.dtype).min / 4
    t = torch.where(mask, target.to(scores.dtype), torch.full_like(scores, neg))
    order = torch.sort(-t, dim=-1, stable=True).indices  # padding last
    s = torch.where(mask, scores / temperature, torch.full_like(scores, neg)).gather(-1, order)
    real = mask.gather(-1, order)
    tail = torch.flip(torch.logcumsumexp(torch.flip(s, [-1]), dim=-1), [-1])  # log Σ_{j≥i}
    terms = torch.where(real, tail - s, torch.zeros_like(s))
    per_query = terms.sum(dim=-1) / real.sum(dim=-1).clamp(min=1)
    has = mask.sum(dim=-1) >= 2
    if not bool(has.any()):
        return scores.new_zeros(())
    return per_query[has].mean()


def consistency(a: torch.Tensor, b: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``mean_d (a(d) − b(d))²`` over real candidates, per query, then mean over queries."""
    return masked_mse(a, b, mask)


@dataclass(frozen=True)
class LossParts:
    """The total loss and its terms (detached copies are for logging)."""

    total: torch.Tensor
    fit: torch.Tensor
    consistency: torch.Tensor
    rank: torch.Tensor


def readout_loss(
    scores: torch.Tensor,
    target: torch.Tensor,
    mask: torch.Tensor,
    lambda_: float = 0.0,
    *,
    log_probs: torch.Tensor | None = None,
    fit: str = "mse",
    rank_weight: float = 0.0,
    rank_temperature: float = 1.0,
    rank_loss: str = "listnet",
    fit_weight: float = 1.0,
    rank_target: torch.Tensor | None = None,
    weights: torch.Tensor | None = None,
) -> LossParts:
    """fit_weight · fit + rank_weight · rank (means over views) + λ · consistency (mean over
    view pairs).

    ``scores`` (Q, V, N), ``log_probs`` (Q, V, N, G) (needed by ``fit="ce"``), ``target`` and
    ``mask`` (Q, N), ``weights`` (Q, V, N) or None (they weigh the fit; ListMLE takes none);
    ``rank_target`` (Q, N): what the ranking term follows instead of ``target`` (e.g. the
    teacher's raw, uncalibrated scores).
    """
    if scores.dim() != 3:
        raise ValueError(f"scores must be (queries, views, candidates), got {tuple(scores.shape)}")
    if fit not in FIT_LOSSES:
        raise ValueError(f"fit must be one of {FIT_LOSSES}, got {fit!r}")
    if fit == "ce" and log_probs is None:
        raise ValueError("fit='ce' needs the log-probabilities of the grades")
    if rank_loss not in RANK_LOSSES:
        raise ValueError(f"rank_loss must be one of {RANK_LOSSES}, got {rank_loss!r}")
    target = target.to(scores.dtype)
    views = scores.shape[1]

    def w(v: int) -> torch.Tensor | None:
        return None if weights is None else weights[:, v]

    if fit == "ce":
        assert log_probs is not None
        fits = [masked_grade_ce(log_probs[:, v], target, mask, w(v)) for v in range(views)]
    else:
        fits = [masked_mse(scores[:, v], target, mask, w(v)) for v in range(views)]
    fit_term = torch.stack(fits).mean()
    if rank_weight:
        ranker = listnet if rank_loss == "listnet" else listmle
        follow = target if rank_target is None else rank_target.to(scores.dtype)
        rank = torch.stack(
            [ranker(scores[:, v], follow, mask, rank_temperature) for v in range(views)]
        ).mean()
    else:
        rank = scores.new_zeros(())
    if views >= 2:
        pairs = list(itertools.combinations(range(views), 2))
        cons = torch.stack([consistency(scores[:, i], scores[:, j], mask) for i, j in pairs]).mean()
    else:
        cons = scores.new_zeros(())
    total = fit_term if fit_weight == 1 else fit_weight * fit_term
    if rank_weight:
        total = total + rank_weight * rank
    if lambda_:
        total = total + lambda_ * cons
    return LossParts(total=total, fit=fit_term, consistency=cons, rank=rank)


def _sym_kl(lp_a: torch.Tensor, lp_b: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """KL(P_A‖P_B) + KL(P_B‖P_A) = Σ_d (P_A(d) − P_B(d)) (log P_A(d) − log P_B(d)) per query
    (real responses only), mean over queries."""
    zero = torch.zeros_like(lp_a)
    la, lb = torch.where(mask, lp_a, zero), torch.where(mask, lp_b, zero)
    per_query = torch.where(mask, (la.exp() - lb.exp()) * (la - lb), zero).sum(dim=-1)
    return per_query.mean()


def _disagreement(lp_a: torch.Tensor, lp_b: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """1 − Σ_d P_A(d) P_B(d) per query (real responses only), mean over queries: the chance that
    a verdict drawn from each view's distribution names two different responses.

    It is the squared term's sum plus the two views' Gini impurities,
    ``½ Σ_d (P_A − P_B)² + ½ (1 − Σ_d P_A²) + ½ (1 − Σ_d P_B²)``, so unlike ``squared`` and
    ``sym_kl`` it does not vanish where both views are uniform (1 − 1/N there): it is 0 only
    when both views name the same response with certainty. The judgement call: the goal counts
    verdicts that flip, and a judge near the uniform distribution flips on any tilt towards a
    slot, so this term asks for agreement *and* a margin; the fit decides which response.
    """
    zero = torch.zeros_like(lp_a)
    pa = torch.where(mask, lp_a.exp(), zero)
    pb = torch.where(mask, lp_b.exp(), zero)
    return (1.0 - (pa * pb).sum(dim=-1)).mean()


def _squared(lp_a: torch.Tensor, lp_b: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return masked_mse(lp_a.exp(), lp_b.exp(), mask)


_CONSISTENCY = {"squared": _squared, "sym_kl": _sym_kl, "disagreement": _disagreement}
CONSISTENCY_KINDS = tuple(_CONSISTENCY)  # the judge config's ``consistency`` choices


def verdict_loss(
    log_probs: torch.Tensor,
    correct: torch.Tensor,
    mask: torch.Tensor,
    lambda_: float = 0.0,
    *,
    consistency_kind: str = "squared",
) -> LossParts:
    """The loss of a trained verdict readout judge (``training/judge_trainer.py``).

    ``log_probs[q, v, d]`` is log P(the verdict names response d) in view (placement) v of item
    q: the distribution over the N slots *realigned to the responses*, so two placements of one
    item compare response by response, not slot by slot. ``correct[q]`` is the correct
    response's index, ``mask[q, d]`` True for real responses (items of 2 and 4 share a batch).

    * fit = mean over views of the mean over items of −log P_v(correct);
    * consistency (mean over view pairs): ``squared`` = mean_d (P_A(d) − P_B(d))² over the real
      responses (OC-SFT's term with P in place of E[g]), or ``sym_kl`` = KL(P_A‖P_B) +
      KL(P_B‖P_A), each exactly 0 when the views are the same placement; or ``disagreement`` =
      1 − Σ_d P_A(d) P_B(d), the chance two drawn verdicts differ (0 only for a certain, shared
      verdict: :func:`_disagreement`);
    * total = fit + λ · consistency.
    """
    if log_probs.dim() != 3:
        raise ValueError(f"log_probs must be (items, views, responses), got {log_probs.shape}")
    if consistency_kind not in CONSISTENCY_KINDS:
        raise ValueError(f"consistency must be one of {CONSISTENCY_KINDS}, got {consistency_kind}")
    views = log_probs.shape[1]
    index = correct.long().view(-1, 1, 1).expand(-1, views, 1)
    fit = -log_probs.gather(-1, index).squeeze(-1).mean()
    cons = log_probs.new_zeros(())
    if views >= 2:
        terms = []
        for i, j in itertools.combinations(range(views), 2):
            a, b = log_probs[:, i], log_probs[:, j]
            terms.append(_CONSISTENCY[consistency_kind](a, b, mask))
        cons = torch.stack(terms).mean()
    total = fit + lambda_ * cons if lambda_ else fit
    return LossParts(total=total, fit=fit, consistency=cons, rank=log_probs.new_zeros(()))
