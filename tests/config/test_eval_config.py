import pytest

from presentation_dependence.config import EvalConfig, to_trec_eval_measure
from presentation_dependence.errors import ConfigError


@pytest.mark.parametrize(
    ("name", "trec"),
    [
        ("ndcg@10", "ndcg_cut_10"),
        ("nDCG@5", "ndcg_cut_5"),
        ("mrr", "recip_rank"),
        ("map", "map"),
        ("P@5", "P_5"),
        ("recall@100", "recall_100"),
        ("ndcg_cut_10", "ndcg_cut_10"),
        ("recip_rank", "recip_rank"),
    ],
)
def test_aliases(name, trec):
    assert to_trec_eval_measure(name) == trec


def test_unknown_measure_did_you_mean():
    with pytest.raises(ConfigError, match="Did you mean"):
        to_trec_eval_measure("ndcg_cutt_10")


def test_empty_measures_rejected():
    with pytest.raises(ConfigError):
        EvalConfig(measures=[])
