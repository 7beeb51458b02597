"""The ``eval`` block of an experiment config."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from presentation_dependence.errors import ConfigError
from presentation_dependence.fields import opt
from presentation_dependence.metrics.measures import parse_measure, trec_eval_name

__all__ = ["EvalConfig", "to_trec_eval_measure"]


def to_trec_eval_measure(name: str) -> str:
    """Map a measure name to pytrec_eval's: ``ndcg@10`` -> ``ndcg_cut_10``, ``mrr`` -> ``recip_rank``.

    pytrec_eval names (``ndcg_cut_10``, ``map``, ``recip_rank``, ``P_5``, ``recall_100``) pass
    through unchanged. Unknown names, and measures trec_eval lacks (``RR@10``, ``Judged@10``),
    raise :class:`ConfigError`; unknown ones with a did-you-mean.
    """
    trec = trec_eval_name(parse_measure(name))
    if trec is None:
        raise ConfigError(
            f"eval.measures: {name!r} has no trec_eval name (it is computed by ir_measures)"
        )
    return trec


@dataclass(frozen=True)
class EvalConfig:
    """How runs are evaluated: ir_measures names, trec_eval's definitions (pytrec_eval)."""

    measures: list[str] = field(
        default_factory=lambda: ["ndcg@10", "map", "mrr"],
        metadata={
            "help": "Measures: ir_measures names (nDCG@10, RR@10 = MS MARCO's MRR@10, AP, "
            "Judged@10, P@10, R@100, AP(rel=2)) or trec_eval names (ndcg_cut_10, map, "
            "recip_rank, P_10, recall_100); measure names match case-insensitively (mrr@10)"
        },
    )
    relevance_level: int = opt(
        1,
        "Minimum grade that counts as relevant for binary measures (MAP, MRR, recall); "
        "TREC DL uses 2. nDCG always uses the graded labels",
    )
    judged_k: int | None = opt(
        10,
        "Also report Judged@k, the share of the top k that has a judgement "
        "(1 − the hole rate), unless eval.measures names it (null = off)",
    )

    def __post_init__(self) -> None:
        if not self.measures:
            raise ConfigError("eval.measures must name at least one measure")
        if self.relevance_level < 1:
            raise ConfigError(f"eval.relevance_level must be >= 1, got {self.relevance_level}")
        if self.judged_k is not None and self.judged_k < 1:
            raise ConfigError(f"eval.judged_k must be >= 1 or null, got {self.judged_k}")
        self.resolved_measures()

    def resolved_measures(self) -> dict[str, Any]:
        """``{name: ir_measures measure}`` in config order, Judged@k appended (see judged_k)."""
        out = {m: parse_measure(m, self.relevance_level) for m in self.measures}
        if self.judged_k is not None:
            name = f"Judged@{self.judged_k}"
            if parse_measure(name) not in out.values():
                out[name] = parse_measure(name)
        return out
