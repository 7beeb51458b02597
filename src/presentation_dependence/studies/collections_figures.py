"""The figures of the multi-collection results table (rendered by :mod:`.collections_table`):
every collection's study rows, each scorer's figure per collection and on the average over
collections, and the paired tests per collection and pooled over collections.

Input: ``ROOT/<collection>/<scorer>/`` run folders (or their archived summaries), each read by
:func:`~.table.study_row`. A collection's cell is its mean over queries with the query
bootstrap CI that ``psi_metrics.json`` carries (computed here, seeded, where it carries none:
nDCG@10 in the given order). The average over collections is the macro mean of the collection
means with a bootstrap stratified by collection
(:func:`~presentation_dependence.metrics.stats.stratified_bootstrap_ci`: every collection weighs
the same); collections on a separate axis (e.g. DL19's alternative first stages) are left out
of it by naming the averaged ones.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from presentation_dependence.config.loader import read_yaml_mapping
from presentation_dependence.errors import ConfigError
from presentation_dependence.metrics.order import TIE_TOL
from presentation_dependence.metrics.stats import (
    mean_with_ci,
    stratified_bootstrap_ci,
    stratified_paired_bootstrap,
    stratified_permutation_test,
)
from presentation_dependence.seeding import rng_from
from presentation_dependence.studies.sequencer import SCORER_ORDER, study_run_dirs
from presentation_dependence.studies.table import PAIRED_METRICS, paired_rows, study_row

__all__ = [
    "AVERAGE",
    "DEFAULT_PAIRS",
    "POOLED",
    "TABLE_METRICS",
    "Cell",
    "Collections",
    "PairedTest",
]
__all__ += ["load_collections", "metric_cells", "n_collections", "paired_tests", "parse_pair"]
__all__ += ["per_query"]

# Each pair (a, b) is tested as a − b; the first is the verdict's (student, baseline).
DEFAULT_PAIRS = (
    ("oc-sft", "off-the-shelf"),
    ("oc-sft", "order-averaged"),
    ("order-averaged", "off-the-shelf"),
)

# Spread and ties are read on each scorer's own scale: the readout's and the students' 0–3 grades
# compare with each other, a bi-encoder's cosines or BM25's rank scores do not compare with them.
_OWN_SCALE = "on each scorer's own scale: comparable among the 0–3 grade scorers only"

# (key, label): the per-query keys of psi_metrics.json's shuffled variant, and ``ndcg10_given``
# (metrics.json's nDCG@10 of the run in the first stage's order).
TABLE_METRICS = (
    ("ndcg10_given", "nDCG@10 in the given order"),
    ("ndcg_mean", "nDCG@10 over the shuffles"),
    ("tau_psi", "τ-PSI"),
    ("jaccard_topk", "top-k Jaccard"),
    ("score_spread", f"score spread (mean within-query std; {_OWN_SCALE})"),
    ("tied_share", f"tied share (within {TIE_TOL:g} of another candidate; {_OWN_SCALE})"),
)
AVERAGE = "average"
POOLED = "pooled"  # the scope of a test pooled over the averaged collections


@dataclass(frozen=True)
class Cell:
    """One scorer's figure on one collection (or the average): mean, 95% CI (None: no per-query
    values to resample), queries."""

    mean: float
    ci_low: float | None
    ci_high: float | None
    queries: int


@dataclass(frozen=True)
class PairedTest:
    """a − b over the queries of ``scope``: a collection, or :data:`POOLED` over the averaged
    collections where both ran (the macro mean difference, stratified bootstrap and sign flips
    within collections)."""

    a: str
    b: str
    scope: str
    metric: str
    queries: int
    mean_diff: float
    ci_low: float
    ci_high: float
    p_value: float  # the bootstrap's (shift method)
    permutation_p: float
    collections: int = 1  # pooled: over how many collections


_TEST_KEYS = ("metric", "queries", "mean_diff", "ci_low", "ci_high", "p_value", "permutation_p")


@dataclass(frozen=True)
class Collections:
    """The study rows of every collection (collection → scorer → :func:`study_row` plus the
    run's ``retain_top_k``) and the collections the average is over."""

    rows: Mapping[str, Mapping[str, Mapping[str, Any]]]
    average: tuple[str, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.rows)

    @property
    def scorers(self) -> tuple[str, ...]:
        names = {s for by_scorer in self.rows.values() for s in by_scorer}
        order = SCORER_ORDER
        return tuple(sorted(names, key=lambda s: (order.index(s) if s in order else len(order), s)))

    def row(self, collection: str, scorer: str) -> Mapping[str, Any] | None:
        return self.rows[collection].get(scorer)


def n_collections(n: int) -> str:
    return f"{n} collection{'' if n == 1 else 's'}"


def _retain_top_k(folder: Path) -> int | None:
    """The k of the run's top-k Jaccard (``robustness.retain_top_k`` of resolved_config.yaml)."""
    path = folder / "resolved_config.yaml"
    block = read_yaml_mapping(path).get("robustness") if path.is_file() else None
    k = block.get("retain_top_k") if isinstance(block, Mapping) else None
    return k if isinstance(k, int) else None


def load_collections(root: str | Path, average: Sequence[str] | None = None) -> Collections:
    """Every ``root/<collection>/`` holding finished scorer run folders, by name; ``average``
    (default: all of them) must name some of them."""
    base = Path(root)
    if not base.is_dir():
        raise ConfigError(f"{base} is not a folder of collections")
    rows: dict[str, dict[str, Mapping[str, Any]]] = {}
    for sub in sorted(p for p in base.iterdir() if p.is_dir()):
        if any((p / "psi" / "psi_metrics.json").is_file() for p in sub.iterdir() if p.is_dir()):
            rows[sub.name] = {
                p.name: {**study_row(p), "retain_top_k": _retain_top_k(p)}
                for p in study_run_dirs(sub)
            }
    if not rows:
        raise ConfigError(f"no collection under {base} holds a finished run folder")
    chosen = tuple(dict.fromkeys(average)) if average else tuple(rows)  # each once
    unknown = [c for c in chosen if c not in rows]
    if unknown:
        raise ConfigError(f"--average {' '.join(unknown)}: not a collection under {base}")
    return Collections(rows, chosen)


def per_query(row: Mapping[str, Any], metric: str) -> dict[str, float]:
    """The row's per-query values of ``metric`` (query id → value)."""
    if metric == "ndcg10_given":
        return dict(row["given_per_query"])
    return {q: float(v[metric]) for q, v in row["per_query"].items() if metric in v}


def _cell(row: Mapping[str, Any], metric: str, seed: int, name: str) -> Cell | None:
    """The collection's figure: the summary's mean and CI where psi_metrics.json has them, else
    the mean of the per-query values and their seeded percentile bootstrap CI."""
    values = per_query(row, metric)
    block = row["summary"].get(metric)
    if isinstance(block, Mapping) and "ci_low" in block:
        n = int(block.get("n", len(values)))
        return Cell(float(block["mean"]), float(block["ci_low"]), float(block["ci_high"]), n)
    if values:
        ci = mean_with_ci(list(values.values()), rng_from(seed, "collections", name, metric))
        return Cell(float(ci["mean"]), float(ci["ci_low"]), float(ci["ci_high"]), len(values))
    if metric == "ndcg10_given" and row.get("ndcg10_given") is not None:
        return Cell(float(row["ndcg10_given"]), None, None, int(row.get("queries") or 0))
    return None


def _average_cell(
    c: Collections, cells: Mapping[tuple[str, str, str], Cell], scorer: str, metric: str, seed: int
) -> Cell | None:
    """The macro mean of the averaged collections' means, CI stratified by collection; None
    when the scorer lacks the figure on one of them."""
    parts = [cells.get((metric, scorer, coll)) for coll in c.average]
    if any(p is None for p in parts):
        return None
    rows = [c.row(coll, scorer) for coll in c.average]
    groups = [list(per_query(r, metric).values()) for r in rows if r is not None]
    mean = sum(p.mean for p in parts if p is not None) / len(parts)
    queries = sum(p.queries for p in parts if p is not None)
    if any(not g for g in groups):
        return Cell(mean, None, None, queries)
    ci = stratified_bootstrap_ci(groups, rng=rng_from(seed, "collections-average", scorer, metric))
    return Cell(mean, float(ci["ci_low"]), float(ci["ci_high"]), queries)


def metric_cells(c: Collections, seed: int = 0) -> dict[tuple[str, str, str], Cell]:
    """(metric, scorer, collection or ``average``) → :class:`Cell`, for every figure there is."""
    cells: dict[tuple[str, str, str], Cell] = {}
    for metric, _ in TABLE_METRICS:
        for scorer in c.scorers:
            for coll in c.names:
                row = c.row(coll, scorer)
                got = None if row is None else _cell(row, metric, seed, f"{coll}/{scorer}")
                if got is not None:
                    cells[metric, scorer, coll] = got
            avg = _average_cell(c, cells, scorer, metric, seed)
            if avg is not None:
                cells[metric, scorer, AVERAGE] = avg
    return cells


def parse_pair(text: str) -> tuple[str, str]:
    """``A:B`` (test A − B) as a pair of scorer names."""
    a, sep, b = text.partition(":")
    if not sep or not a or not b or ":" in b:
        raise ConfigError(f"--pairs {text!r}: expected SCORER:BASELINE, e.g. oc-sft:off-the-shelf")
    return a, b


def _pooled(c: Collections, a: str, b: str, metric: str, seed: int) -> PairedTest | None:
    """a − b pooled over the averaged collections where both ran: stratified bootstrap and
    sign flips within each collection."""
    a_groups, b_groups, scopes = [], [], []
    for coll in c.average:
        ra, rb = c.row(coll, a), c.row(coll, b)
        if ra is None or rb is None:
            continue
        va, vb = per_query(ra, metric), per_query(rb, metric)
        qids = [q for q in vb if q in va]
        if qids:
            a_groups.append([va[q] for q in qids])
            b_groups.append([vb[q] for q in qids])
            scopes.append(coll)
    if not scopes:
        return None
    name = f"{a}-vs-{b}/{metric}"
    boot = stratified_paired_bootstrap(a_groups, b_groups, rng=rng_from(seed, "pooled", name))
    perm = stratified_permutation_test(a_groups, b_groups, rng=rng_from(seed, "pooled", name, 1))
    queries = sum(len(g) for g in a_groups)
    return PairedTest(
        a,
        b,
        POOLED,
        metric,
        queries,
        **boot,
        permutation_p=perm["p_value"],
        collections=len(scopes),
    )


def paired_tests(
    c: Collections, pairs: Sequence[tuple[str, str]] = DEFAULT_PAIRS, seed: int = 0
) -> list[PairedTest]:
    """Each pair per collection where both scorers ran (:func:`~.table.paired_rows`:
    paired bootstrap and permutation test), then pooled over the averaged collections."""
    out = []
    for a, b in pairs:
        for coll in c.names:
            ra, rb = c.row(coll, a), c.row(coll, b)
            if ra is None or rb is None:
                continue
            for p in paired_rows([ra], base=rb, seed=seed, stream=coll):
                out.append(PairedTest(a, b, coll, **{k: p[k] for k in _TEST_KEYS}))
        for metric in PAIRED_METRICS:
            pooled = _pooled(c, a, b, metric, seed)
            if pooled is not None:
                out.append(pooled)
    return out
