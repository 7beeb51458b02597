"""Metrics as pure functions over numpy arrays: ranking quality, order instability, decision
flips, the bootstrap/permutation statistics to report them with, and the statistics of
right/wrong outcomes and reruns (Wilson interval, exact McNemar test, rerun noise).

Each function states its formula, source and tie rule in its docstring; ``docs/EVAL-PROTOCOL.md``
("Order-instability metrics") collects them. Score matrices are (M presentations, n candidates)
with columns aligned by candidate, never by slot.
"""

from presentation_dependence.metrics.decisions import (
    answer_flip,
    flip_rate,
    jaccard,
    mean_pairwise_jaccard,
    normalize_answer,
    pair_flip_rate,
    retained_set,
    retained_set_changed,
)
from presentation_dependence.metrics.order import (
    delta_ndcg,
    kendall_tau_b,
    mean_pairwise_tau,
    rank_variance,
    score_spread,
    score_variance,
    tau_psi,
    tied_share,
    zeng_psi,
    zeng_psi_corpus,
)
from presentation_dependence.metrics.proportions import mcnemar_exact, wilson_interval
from presentation_dependence.metrics.ranking import (
    ndcg_at_k,
    ndcg_per_presentation,
    random_order_ndcg,
    ranks_from_scores,
)
from presentation_dependence.metrics.reruns import flip_noise_to_se, rerun_se
from presentation_dependence.metrics.stats import (
    bootstrap_ci,
    mean_with_ci,
    paired_bootstrap,
    paired_comparison,
    paired_permutation_test,
    stratified_bootstrap_ci,
    stratified_paired_bootstrap,
    stratified_permutation_test,
)

__all__ = [
    "answer_flip",
    "bootstrap_ci",
    "delta_ndcg",
    "flip_noise_to_se",
    "flip_rate",
    "jaccard",
    "kendall_tau_b",
    "mcnemar_exact",
    "mean_pairwise_jaccard",
    "mean_pairwise_tau",
    "mean_with_ci",
    "ndcg_at_k",
    "ndcg_per_presentation",
    "normalize_answer",
    "pair_flip_rate",
    "paired_bootstrap",
    "paired_comparison",
    "paired_permutation_test",
    "random_order_ndcg",
    "rank_variance",
    "ranks_from_scores",
    "rerun_se",
    "retained_set",
    "retained_set_changed",
    "score_spread",
    "score_variance",
    "stratified_bootstrap_ci",
    "stratified_paired_bootstrap",
    "stratified_permutation_test",
    "tau_psi",
    "tied_share",
    "wilson_interval",
    "zeng_psi",
    "zeng_psi_corpus",
]
