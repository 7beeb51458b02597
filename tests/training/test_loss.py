"""The readout losses as pure functions (no model, no peft)."""

from __future__ import annotations

import pytest
import torch

from presentation_dependence.errors import ConfigError
from presentation_dependence.training.config import LossOptions
from presentation_dependence.training.loss import (
    consistency,
    grade_targets,
    listmle,
    listnet,
    masked_grade_ce,
    masked_mse,
    readout_loss,
)


def test_masked_mse_is_per_query_mean_then_mean_over_queries():
    pred = torch.tensor([[1.0, 2.0, 0.0], [3.0, 0.0, 0.0]])
    target = torch.tensor([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    mask = torch.tensor([[True, True, False], [True, False, False]])
    # query 0: (1 + 4) / 2 = 2.5; query 1: 4 / 1 = 4; mean 3.25
    assert masked_mse(pred, target, mask).item() == pytest.approx(3.25)


def test_padding_contributes_nothing_even_when_nan_or_inf():
    mask = torch.tensor([[True, True, False, False]])
    clean = torch.tensor([[1.0, 2.0, 0.0, 0.0]], requires_grad=True)
    dirty = torch.tensor([[1.0, 2.0, float("nan"), float("inf")]], requires_grad=True)
    target = torch.tensor([[0.5, 1.0, 7.0, -3.0]])
    a, b = masked_mse(clean, target, mask), masked_mse(dirty, target, mask)
    assert a.item() == b.item()
    b.backward()
    assert torch.isfinite(dirty.grad).all()
    assert dirty.grad[0, 2:].abs().sum().item() == 0.0


def test_batch_loss_is_mean_of_its_queries_whatever_their_lengths():
    s1 = torch.tensor([[[1.0, 2.0, 3.0], [1.5, 2.5, 2.0]]])
    s2 = torch.tensor([[[0.5, 9.0, 9.0], [0.0, 9.0, 9.0]]])  # one real candidate
    t1, t2 = torch.tensor([[1.0, 1.0, 1.0]]), torch.tensor([[2.0, 0.0, 0.0]])
    m1, m2 = torch.tensor([[True] * 3]), torch.tensor([[True, False, False]])
    alone = [readout_loss(s, t, m, 0.5).total for s, t, m in ((s1, t1, m1), (s2, t2, m2))]
    batch = readout_loss(torch.cat([s1, s2]), torch.cat([t1, t2]), torch.cat([m1, m2]), 0.5)
    assert batch.total.item() == pytest.approx(sum(x.item() for x in alone) / 2)


def test_consistency_is_zero_for_identical_views_and_positive_otherwise():
    mask = torch.ones(2, 4, dtype=torch.bool)
    a = torch.rand(2, 4)
    assert consistency(a, a.clone(), mask).item() == 0.0
    assert consistency(a, a + 0.1, mask).item() > 0
    same = readout_loss(torch.stack([a, a], dim=1), torch.zeros(2, 4), mask, 3.0)
    assert same.consistency.item() == 0.0
    assert same.total.item() == same.fit.item()


def test_total_is_fit_plus_lambda_times_consistency():
    scores = torch.rand(3, 2, 5)
    target = torch.rand(3, 5) * 3
    mask = torch.ones(3, 5, dtype=torch.bool)
    parts = readout_loss(scores, target, mask, 2.0)
    assert parts.total.item() == pytest.approx(parts.fit.item() + 2.0 * parts.consistency.item())
    fit = (masked_mse(scores[:, 0], target, mask) + masked_mse(scores[:, 1], target, mask)) / 2
    assert parts.fit.item() == pytest.approx(fit.item())
    one_view = readout_loss(scores[:, :1], target, mask, 2.0)
    assert one_view.consistency.item() == 0.0


def test_shape_errors():
    with pytest.raises(ValueError):
        readout_loss(torch.zeros(2, 3), torch.zeros(2, 3), torch.ones(2, 3, dtype=torch.bool))
    with pytest.raises(ValueError):
        masked_mse(torch.zeros(2, 3), torch.zeros(2, 4), torch.ones(2, 3, dtype=torch.bool))


def test_grade_targets_have_the_label_as_expectation() -> None:
    y = torch.tensor([[0.0, 1.3, 2.5, 3.0, 3.7, -1.0]])
    q = grade_targets(y, 4)
    assert torch.allclose(q.sum(-1), torch.ones(1, 6))
    expect = (q * torch.arange(4.0)).sum(-1)
    assert torch.allclose(expect, y.clamp(0, 3))
    assert torch.allclose(q[0, 1], torch.tensor([0.0, 0.7, 0.3, 0.0]))


def test_grade_ce_is_lowest_at_the_target_distribution_and_keeps_gradient_when_peaked() -> None:
    target = torch.tensor([[0.0, 3.0]])
    mask = torch.ones(1, 2, dtype=torch.bool)
    exact = torch.log(grade_targets(target, 4).clamp(min=1e-9))
    other = torch.log_softmax(torch.zeros(1, 2, 4), dim=-1)
    assert masked_grade_ce(exact, target, mask) < masked_grade_ce(other, target, mask)
    # a confidently wrong slot: E[g]'s squared error barely moves, the cross-entropy does
    logits = torch.tensor([[[12.0, 0.0, 0.0, 0.0], [12.0, 0.0, 0.0, 0.0]]], requires_grad=True)
    lp = torch.log_softmax(logits, dim=-1)
    scores = (lp.exp() * torch.arange(4.0)).sum(-1)
    (g_mse,) = torch.autograd.grad(masked_mse(scores, target, mask), logits, retain_graph=True)
    (g_ce,) = torch.autograd.grad(masked_grade_ce(lp, target, mask), logits)
    assert g_mse.abs().max() < 1e-3 < g_ce.abs().max()


def test_listnet_prefers_the_target_order_and_ignores_padding() -> None:
    target = torch.tensor([[3.0, 0.0, 0.0]])
    mask = torch.tensor([[True, True, False]])
    good = listnet(torch.tensor([[3.0, 0.0, float("nan")]]), target, mask)
    bad = listnet(torch.tensor([[0.0, 3.0, float("nan")]]), target, mask)
    assert torch.isfinite(good) and good < bad
    assert (
        listnet(torch.tensor([[1.0, 0.0, 0.0]]), target, torch.tensor([[True, False, False]])) == 0
    )


def test_uniform_weights_change_nothing_and_weights_shift_the_fit() -> None:
    scores = torch.tensor([[[1.0, 2.0]]])
    target = torch.tensor([[0.0, 0.0]])
    mask = torch.ones(1, 2, dtype=torch.bool)
    plain = readout_loss(scores, target, mask).fit
    ones = readout_loss(scores, target, mask, weights=torch.ones(1, 1, 2)).fit
    assert torch.allclose(plain, ones)
    heavy = readout_loss(scores, target, mask, weights=torch.tensor([[[1.0, 3.0]]])).fit
    assert torch.allclose(heavy, torch.tensor((1.0 + 3 * 4.0) / 4))


def test_readout_loss_terms_add_up() -> None:
    scores = torch.tensor([[[1.0, 2.0], [2.0, 1.0]]])
    lp = torch.log_softmax(torch.randn(1, 2, 2, 4, generator=torch.Generator().manual_seed(0)), -1)
    target = torch.tensor([[3.0, 0.0]])
    mask = torch.ones(1, 2, dtype=torch.bool)
    parts = readout_loss(
        scores, target, mask, 0.5, log_probs=lp, fit="ce", rank_weight=2.0, rank_temperature=0.5
    )
    assert torch.allclose(parts.total, parts.fit + 2.0 * parts.rank + 0.5 * parts.consistency)
    with pytest.raises(ValueError, match="log-probabilities"):
        readout_loss(scores, target, mask, fit="ce")
    with pytest.raises(ValueError, match="fit must be"):
        readout_loss(scores, target, mask, fit="l1")


def test_listmle_matches_the_plackett_luce_likelihood_by_hand() -> None:
    scores = torch.tensor([[0.5, 2.0, -1.0, 7.0]])
    target = torch.tensor([[1.0, 3.0, 0.0, 9.0]])
    mask = torch.tensor([[True, True, True, False]])  # the 4th is padding: ignored
    # target order among real candidates: 1 (3.0), 0 (1.0), 2 (0.0)
    s = [2.0, 0.5, -1.0]
    by_hand = sum(torch.logsumexp(torch.tensor(s[i:]), 0) - s[i] for i in range(3)) / 3
    assert torch.allclose(listmle(scores, target, mask), by_hand)
    # temperature divides the scores; only the target's order counts, not its values
    assert torch.allclose(
        listmle(scores * 2, target, mask, temperature=2.0), listmle(scores, target, mask)
    )
    assert torch.allclose(listmle(scores, target**3 + 5, mask), listmle(scores, target, mask))


def test_listmle_ties_keep_input_order_and_short_lists_count_nothing() -> None:
    scores = torch.tensor([[0.0, 1.0]])
    tied = listmle(scores, torch.tensor([[2.0, 2.0]]), torch.ones(1, 2, dtype=torch.bool))
    first_wins = listmle(scores, torch.tensor([[3.0, 2.0]]), torch.ones(1, 2, dtype=torch.bool))
    assert torch.allclose(tied, first_wins)
    one = torch.tensor([[True, False]])
    assert listmle(torch.tensor([[1.0, float("nan")]]), scores, one) == 0


def test_listmle_gradient_raises_the_teachers_first_and_skips_padding() -> None:
    scores = torch.tensor([[0.0, 0.0, float("nan")]], requires_grad=True)
    loss = listmle(scores, torch.tensor([[0.0, 3.0, 0.0]]), torch.tensor([[True, True, False]]))
    (g,) = torch.autograd.grad(loss, scores)
    assert g[0, 1] < 0 < g[0, 0] and g[0, 2] == 0  # descent raises candidate 1, lowers 0
    assert torch.allclose(loss, torch.log(torch.tensor(2.0)) / 2)


def test_rank_loss_and_fit_weight_in_the_total() -> None:
    scores = torch.tensor([[[1.0, 2.0, 0.0], [2.0, 1.0, 0.0]]])
    target = torch.tensor([[3.0, 0.0, 1.0]])
    mask = torch.ones(1, 3, dtype=torch.bool)
    parts = readout_loss(
        scores, target, mask, 0.5, rank_weight=2.0, rank_loss="listmle", fit_weight=0.25
    )
    mle = (listmle(scores[:, 0], target, mask) + listmle(scores[:, 1], target, mask)) / 2
    assert torch.allclose(parts.rank, mle)
    assert torch.allclose(
        parts.total, 0.25 * parts.fit + 2.0 * parts.rank + 0.5 * parts.consistency
    )
    with pytest.raises(ValueError, match="rank_loss must be"):
        readout_loss(scores, target, mask, rank_weight=1.0, rank_loss="lambdarank")


def test_loss_block_refuses_a_loss_without_fit_or_rank() -> None:
    assert LossOptions(fit_weight=0.0, rank_weight=1.0).rank_loss == "listnet"
    with pytest.raises(ConfigError, match="both 0"):
        LossOptions(fit_weight=0.0)
    with pytest.raises(ConfigError, match="fit_weight must be >= 0"):
        LossOptions(fit_weight=-1.0)


@pytest.mark.parametrize("rank_loss", ["listnet", "listmle"])
def test_ranking_term_gradients_reach_both_views(rank_loss: str) -> None:
    """OC-SFT with a ranking term: each view's scores get a gradient from the rank term alone
    (fit weight 0, λ 0), the mean over views halving it."""
    scores = torch.tensor([[[0.5, 1.5, 1.0], [1.0, 0.5, 1.5]]], requires_grad=True)
    target = torch.tensor([[3.0, 0.0, 1.0]])
    mask = torch.ones(1, 3, dtype=torch.bool)
    parts = readout_loss(
        scores, target, mask, 0.0, rank_weight=1.0, rank_loss=rank_loss, fit_weight=0.0
    )
    (g,) = torch.autograd.grad(parts.total, scores)
    ranker = listnet if rank_loss == "listnet" else listmle
    for v in range(2):
        view = scores[:, v].detach().requires_grad_(True)
        (alone,) = torch.autograd.grad(ranker(view, target, mask), view)
        assert torch.allclose(g[:, v], alone / 2)
        assert g[0, v, 0] < 0  # the teacher's best candidate is pushed up in both views


def test_rank_target_replaces_the_labels_in_the_ranking_term_only() -> None:
    scores = torch.tensor([[[1.0, 2.0, 0.0], [2.0, 1.0, 0.0]]])
    labels = torch.tensor([[3.0, 0.0, 1.0]])
    raw = torch.tensor([[0.80, 0.90, 0.85]])  # a teacher's cosines: another order than labels
    mask = torch.ones(1, 3, dtype=torch.bool)
    kw = {"rank_weight": 1.0, "rank_temperature": 0.02}
    plain = readout_loss(scores, labels, mask, 1.0, **kw)
    on_raw = readout_loss(scores, labels, mask, 1.0, rank_target=raw, **kw)
    assert torch.equal(plain.fit, on_raw.fit) and torch.equal(plain.consistency, on_raw.consistency)
    by_hand = (listnet(scores[:, 0], raw, mask, 0.02) + listnet(scores[:, 1], raw, mask, 0.02)) / 2
    assert torch.allclose(on_raw.rank, by_hand) and not torch.allclose(on_raw.rank, plain.rank)
