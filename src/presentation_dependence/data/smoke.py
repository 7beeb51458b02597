"""The synthetic smoke fixture and its independent check.

The fixture has graded candidates whose first-stage order is deliberately imperfect (a seeded
noisy sort by grade), so an evaluation that ignores the order, or reorders it, shows up as a
wrong nDCG@10. :func:`expected_ndcg_at_10` recomputes nDCG@10 of the first-stage order with its
own formula (no pytrec_eval), which the smoke check compares with ``metrics.json``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from presentation_dependence.io.fixture import write_fixture
from presentation_dependence.records import Candidate, Qrels, Query, RerankRequest
from presentation_dependence.seeding import rng_from

__all__ = ["build_smoke_fixture", "check_smoke_metrics", "expected_ndcg_at_10"]

_TOPICS = [
    "effects of caffeine on sleep quality",
    "how do tides form",
    "history of the printing press",
    "symptoms of vitamin d deficiency",
    "why is the sky blue",
    "how to compost kitchen waste",
]


def build_smoke_fixture(
    out_dir: str | Path, *, seed: int = 13, num_queries: int = 6, num_candidates: int = 15
) -> Path:
    """Write ``<out_dir>/fixture.jsonl`` and return its path. Same seed, same bytes."""
    rng = rng_from(seed)
    requests, judgements = [], {}
    for qi in range(num_queries):
        qid = f"smoke-{qi + 1}"
        topic = _TOPICS[qi % len(_TOPICS)]
        grades = rng.integers(0, 4, size=num_candidates)
        # Noisy sort by grade: the first stage is informative but imperfect.
        noisy = grades + rng.normal(0.0, 1.2, size=num_candidates)
        order = np.argsort(-noisy, kind="stable")
        cands = []
        for rank, j in enumerate(order, start=1):
            docid = f"{qid}-d{j:02d}"
            text = f"Passage {docid} on '{topic}'. Synthetic relevance grade {int(grades[j])}."
            cands.append(Candidate(docid, text, rank, float(round(noisy[j], 4))))
        requests.append(RerankRequest(Query(qid, topic), tuple(cands)))
        judgements[qid] = {f"{qid}-d{j:02d}": int(g) for j, g in enumerate(grades)}
    path = Path(out_dir) / "fixture.jsonl"
    write_fixture(path, requests, Qrels(judgements))
    return path


def expected_ndcg_at_10(ranked_grades: Sequence[int], all_grades: Sequence[int]) -> float:
    """nDCG@10 with trec_eval's gains: DCG = Σ_{i=1}^{10} g_i / log2(i + 1), over the ideal DCG.

    Järvelin & Kekäläinen (2002), with linear gain as in trec_eval's ``ndcg_cut``. The ideal
    ordering sorts every judged grade of the query, not only the retrieved ones.
    """

    def dcg(gs: Sequence[int]) -> float:
        return sum(g / math.log2(i + 2) for i, g in enumerate(gs[:10]) if g > 0)

    ideal = dcg(sorted(all_grades, reverse=True))
    return dcg(list(ranked_grades)) / ideal if ideal > 0 else 0.0


def check_smoke_metrics(
    fixture_path: str | Path, metrics: Mapping[str, object], tol: float = 1e-9
) -> list[str]:
    """Differences between ``metrics.json`` and the fixture's own nDCG@10; empty when they agree."""
    problems: list[str] = []
    per_query = metrics.get("per_query")
    if not isinstance(per_query, dict):
        return ["metrics.json has no per_query block"]
    expected = {}
    for line in Path(fixture_path).read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        qrels = row["qrels"]
        ranked = sorted(row["candidates"], key=lambda c: c["rank"])
        expected[row["qid"]] = expected_ndcg_at_10(
            [qrels.get(c["docid"], 0) for c in ranked], list(qrels.values())
        )
    key = next((k for k in ("ndcg@10", "ndcg_cut_10") if k in next(iter(per_query.values()))), None)
    if key is None:
        return ["metrics.json reports no nDCG@10 (add ndcg@10 to eval.measures)"]
    if set(per_query) != set(expected):
        problems.append(
            f"queries differ: metrics {sorted(per_query)} vs fixture {sorted(expected)}"
        )
    for qid, want in expected.items():
        got = per_query.get(qid, {}).get(key)
        if got is None or abs(got - want) > tol:
            problems.append(f"{qid}: metrics.json nDCG@10={got}, independent formula {want:.12f}")
    mean_want = float(np.mean(list(expected.values())))
    mean_block = metrics.get("mean")
    mean_got = mean_block.get(key) if isinstance(mean_block, dict) else None
    if mean_got is None or abs(mean_got - mean_want) > tol:
        problems.append(f"mean: metrics.json {mean_got}, independent formula {mean_want:.12f}")
    return problems
