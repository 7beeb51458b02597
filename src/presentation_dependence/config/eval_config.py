"""The ``eval`` block of an experiment config."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from presentation_dependence.errors import ConfigError
from presentation_dependence.registry import did_you_mean

__all__ = ["EvalConfig", "to_trec_eval_measure"]

# pytrec_eval measure families that take no cutoff / take a cutoff suffix "_<k>".
_PLAIN = ["map", "recip_rank", "ndcg", "Rprec", "bpref", "num_rel", "num_ret", "num_rel_ret"]
_CUTOFF = ["ndcg_cut", "P", "recall", "map_cut", "success"]
_ALIASES = {
    "ndcg": "ndcg_cut",
    "p": "P",
    "precision": "P",
    "recall": "recall",
    "r": "recall",
    "map": "map_cut",
    "success": "success",
}


def to_trec_eval_measure(name: str) -> str:
    """Map a measure name to pytrec_eval's: ``ndcg@10`` -> ``ndcg_cut_10``, ``mrr`` -> ``recip_rank``.

    pytrec_eval names (``ndcg_cut_10``, ``map``, ``recip_rank``, ``P_5``, ``recall_100``) pass
    through unchanged. Unknown names raise :class:`ConfigError` with a did-you-mean.
    """
    if name in ("mrr", "MRR"):
        return "recip_rank"
    m = re.fullmatch(r"([A-Za-z_]+)@(\d+)", name)
    if m:
        base, k = m.group(1), m.group(2)
        fam = _ALIASES.get(base.lower())
        if fam is None:
            raise ConfigError(
                f"eval.measures: unknown measure {name!r}.{did_you_mean(base, list(_ALIASES))}"
            )
        return f"{fam}_{k}"
    if name in _PLAIN:
        return name
    m = re.fullmatch(r"([A-Za-z_]+)_(\d+)", name)
    if m and m.group(1) in _CUTOFF:
        return name
    known = _PLAIN + [f"{c}_10" for c in _CUTOFF] + ["ndcg@10", "mrr", "recall@100"]
    raise ConfigError(f"eval.measures: unknown measure {name!r}.{did_you_mean(name, known)}")


@dataclass(frozen=True)
class EvalConfig:
    """How runs are evaluated (pytrec_eval, i.e. trec_eval's definitions)."""

    measures: list[str] = field(
        default_factory=lambda: ["ndcg@10", "map", "mrr"],
        metadata={
            "help": "Measures: trec_eval names (ndcg_cut_10, map, recip_rank, P_10, recall_100) "
            "or aliases (ndcg@10, mrr, recall@100, P@10)"
        },
    )
    relevance_level: int = field(
        default=1,
        metadata={
            "help": "Minimum grade that counts as relevant for binary measures (MAP, MRR, recall); "
            "TREC DL uses 2. nDCG always uses the graded labels"
        },
    )

    def __post_init__(self) -> None:
        if not self.measures:
            raise ConfigError("eval.measures must name at least one measure")
        for m in self.measures:
            to_trec_eval_measure(m)
        if self.relevance_level < 1:
            raise ConfigError(f"eval.relevance_level must be >= 1, got {self.relevance_level}")

    def trec_eval_measures(self) -> dict[str, str]:
        """``{configured name: pytrec_eval name}`` in config order."""
        return {m: to_trec_eval_measure(m) for m in self.measures}
