"""Response ranking with the expected-grade readout: responses as candidates, B = 4 per prompt.

Each item's responses are scored under M seeded shuffles (``random_shuffle`` from
:mod:`~presentation_dependence.presentations`, generator from (seed, 'response_rank',
item id)), by any registered reranker; the default is ``GradeReranker`` with ``chunk_size: 4``
(docs/SCORING.md §2). A presented list gives response j the first-stage rank of its slot, so
score ties resolve by slot, as in the passage experiments. Per item, with the (M, n) score
matrix aligned by response:

* nDCG@k (k = 1 by default) per presentation, gains = correctness labels (1/0), averaged over M;
  beside it the chance level, the expected nDCG@k of a uniformly random order
  (:func:`~presentation_dependence.metrics.random_order_ndcg`, averaged over items);
* τ-PSI over the M presentations (docs/EVAL-PROTOCOL.md);
* for every (correct, incorrect) pair, "correct scored strictly above incorrect" per
  presentation: the pair flip rate (pairs whose verdict is not the same in all M) and the pairwise
  accuracy (share of presentation x pair verdicts that are right).

Items without a correct or without an incorrect response are skipped (logged): they have no
pair and nDCG is constant.

``presdep judge`` with ``task: rank`` scores the items through :class:`RankStage` (run by
:func:`~presentation_dependence.runners.stage.run_units`): one file per item,
``items/itemNNNNN.json``, reused only when the item (its id, prompt, responses, labels) and the
config blocks the scores depend on are unchanged, so a killed run resumes at the item in flight.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from presentation_dependence.judge.items.records import ResponseItem
from presentation_dependence.metrics import (
    mean_with_ci,
    ndcg_per_presentation,
    pair_flip_rate,
    random_order_ndcg,
    tau_psi,
)
from presentation_dependence.presentations import draw_presentations, score_presentations
from presentation_dependence.records import Candidate, Query
from presentation_dependence.rerankers import Reranker
from presentation_dependence.runners.fingerprint import FINGERPRINT_KEY
from presentation_dependence.runners.run_folder import RunFolder
from presentation_dependence.runners.stage import CONFIG_KEY, config_fingerprint

__all__ = ["RankStage", "rank_item", "rank_responses", "ranking_summary", "usable_items"]

logger = logging.getLogger(__name__)
STREAM = "response_rank"


def rank_item(
    item: ResponseItem, reranker: Reranker, *, num_presentations: int, seed: int, ndcg_k: int = 1
) -> dict[str, Any]:
    """Score one item under M seeded presentations; its per-item record."""
    n = len(item.responses)
    perms = draw_presentations(
        "random_shuffle", n, num_presentations, seed, f"{STREAM}:{item.item_id}"
    )
    responses = [Candidate(f"r{j}", text, rank=j + 1) for j, text in enumerate(item.responses)]
    ps = score_presentations(
        reranker, Query(item.item_id, item.prompt), responses, perms, renumber_ranks=True
    )
    scores = ps.scores
    slots = ps.slots if ps.slots is not None else ps.positions + 1
    gains = np.asarray(item.labels, dtype=np.float64)
    ndcgs = ndcg_per_presentation(scores, gains, ndcg_k, gains)
    correct = [i for i, lab in enumerate(item.labels) if lab]
    wrong = [i for i, lab in enumerate(item.labels) if not lab]
    pref = np.array(
        [[scores[m, c] > scores[m, w] for c in correct for w in wrong] for m in range(len(perms))]
    )
    return {
        "item_id": item.item_id,
        "labels": [bool(x) for x in item.labels],
        "presentations": perms.tolist(),
        "scores": scores.tolist(),
        "slots": slots.tolist(),
        "ndcg": [float(x) for x in ndcgs],
        "ndcg_mean": float(np.mean(ndcgs)),
        "tau_psi": float(tau_psi(scores)),
        "pref": pref.astype(int).tolist(),
    }


def usable_items(items: Sequence[ResponseItem]) -> list[ResponseItem]:
    """The items with both a correct and an incorrect response (the others are logged)."""
    usable = [it for it in items if 0 < it.num_correct < len(it.responses)]
    if len(usable) < len(items):
        logger.info(
            "ranking: skipped %d items with no correct or no incorrect response",
            len(items) - len(usable),
        )
    if not usable:
        raise ValueError("no item has both a correct and an incorrect response")
    return usable


def ranking_summary(
    per_item: Sequence[Mapping[str, Any]],
    *,
    skipped_items: int,
    num_presentations: int,
    ndcg_k: int,
    rng: np.random.Generator,
    n_resamples: int = 2000,
    confidence: float = 0.95,
) -> dict[str, Any]:
    """The corpus summary of per-item records: means with bootstrap intervals over items, the
    pair flip rate and the pairwise accuracy."""
    ndcg = np.array([r["ndcg_mean"] for r in per_item])
    taus = np.array([r["tau_psi"] for r in per_item])
    taus = taus[~np.isnan(taus)]
    pref = np.concatenate([np.asarray(r["pref"], dtype=bool) for r in per_item], axis=1)
    return {
        "items": len(per_item),
        "skipped_items": skipped_items,
        "num_presentations": num_presentations,
        "ndcg_k": ndcg_k,
        "ndcg": mean_with_ci(ndcg, rng, n_resamples=n_resamples, confidence=confidence),
        "ndcg_chance": float(np.mean([random_order_ndcg(r["labels"], ndcg_k) for r in per_item])),
        "tau_psi": (
            mean_with_ci(taus, rng, n_resamples=n_resamples, confidence=confidence)
            if taus.size
            else None
        ),
        "pairs": int(pref.shape[1]),
        "pair_flip_rate": pair_flip_rate(pref),
        "pairwise_accuracy": float(pref.mean()),
    }


def rank_responses(
    items: Sequence[ResponseItem],
    reranker: Reranker,
    *,
    num_presentations: int,
    seed: int,
    ndcg_k: int = 1,
    rng: np.random.Generator,
    n_resamples: int = 2000,
    confidence: float = 0.95,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Per-item records and the corpus summary, in memory (no run folder)."""
    usable = usable_items(items)
    per_item = [
        rank_item(it, reranker, num_presentations=num_presentations, seed=seed, ndcg_k=ndcg_k)
        for it in usable
    ]
    summary = ranking_summary(
        per_item,
        skipped_items=len(items) - len(usable),
        num_presentations=num_presentations,
        ndcg_k=ndcg_k,
        rng=rng,
        n_resamples=n_resamples,
        confidence=confidence,
    )
    return per_item, summary


def _item_sha256(item: ResponseItem) -> str:
    blob = [item.item_id, item.prompt, list(item.responses), [bool(x) for x in item.labels]]
    return hashlib.sha256(json.dumps(blob, ensure_ascii=False).encode("utf-8")).hexdigest()


class RankStage:
    """Rank one item (a ``(position, item)`` unit); its file is ``items/itemNNNNN.json``."""

    name = "rank"
    unit = "item"
    fix = "use another --out (the data or the reranker/ranking config changed)"

    def __init__(
        self,
        folder: RunFolder,
        reranker: Reranker,
        config: Mapping[str, Any],
        *,
        num_presentations: int,
        seed: int,
        ndcg_k: int,
    ) -> None:
        self.folder, self.reranker = folder, reranker
        self.num_presentations, self.seed, self.ndcg_k = num_presentations, seed, ndcg_k
        self.config_sha256 = config_fingerprint(config)

    def key(self, unit: tuple[int, ResponseItem]) -> str:
        return f"items/item{unit[0]:05d}"

    def path(self, key: str) -> Path:
        return self.folder.path / f"{key}.json"

    def read(self, path: Path) -> dict[str, Any]:
        stored: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        return stored

    def problem(self, unit: tuple[int, ResponseItem], stored: Mapping[str, Any]) -> str | None:
        item = unit[1]
        if stored["record"]["item_id"] != item.item_id:
            return f"it holds item {stored['record']['item_id']!r}, not {item.item_id!r}"
        if stored.get(FINGERPRINT_KEY) != _item_sha256(item):
            return "the item's prompt, responses or labels differ"
        if stored.get(CONFIG_KEY) != self.config_sha256:
            return "it was computed with another config"
        return None

    def fingerprints(self, unit: tuple[int, ResponseItem]) -> dict[str, str]:
        return {FINGERPRINT_KEY: _item_sha256(unit[1]), CONFIG_KEY: self.config_sha256}

    def compute(self, unit: tuple[int, ResponseItem]) -> dict[str, Any]:
        return rank_item(
            unit[1],
            self.reranker,
            num_presentations=self.num_presentations,
            seed=self.seed,
            ndcg_k=self.ndcg_k,
        )

    def write(self, path: Path, record: dict[str, Any], fingerprints: Mapping[str, Any]) -> None:
        text = json.dumps({**fingerprints, "record": record}, ensure_ascii=False) + "\n"
        self.folder.write_text(path.relative_to(self.folder.path), text)

    def describe(self) -> dict[str, Any]:
        return {"reranker": self.reranker.describe()}

    def stored(self, units: Sequence[tuple[int, ResponseItem]]) -> list[dict[str, Any]]:
        """The per-item records of ``units`` (all on disk), in order."""
        return [self.read(self.path(self.key(u)))["record"] for u in units]
