"""The multi-collection results table (``presdep study collections``, docs/RESULTS.md): one
compact table per metric (rows = scorers, columns = the collections and the average over the
averaged ones, cells ``mean [95% CI]``), the paired tests per collection and pooled, the verdict
on the goal and the cost per scorer. The figures come from :mod:`.collections_figures`.

The goal (issues 5, 13 and 35), judged for the first pair (a, b), by default OC-SFT against
the off-the-shelf readout, on the average over collections and on each collection: a's τ-PSI at
most half of b's, no collapse (:func:`~.table.collapsed`), and a ranking above b's over
the shuffles: the paired 95% CI of the nDCG@10 difference above 0 (pooled over the averaged
collections for the average). The collections where it does not hold are named.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from presentation_dependence.io.markdown import markdown_table
from presentation_dependence.studies.collections_figures import (
    AVERAGE,
    DEFAULT_PAIRS,
    POOLED,
    TABLE_METRICS,
    Cell,
    Collections,
    PairedTest,
    load_collections,
    metric_cells,
    n_collections,
    paired_tests,
)
from presentation_dependence.studies.table import collapsed, processors_line

__all__ = ["Goal", "collections_table", "goal", "verdict_lines"]

Cells = Mapping[tuple[str, str, str], Cell]


def _fmt(cell: Cell | None) -> str:
    if cell is None:
        return "—"
    if cell.ci_low is None or cell.ci_high is None:
        return f"{cell.mean:.3f}"
    return f"{cell.mean:.3f} [{cell.ci_low:.3f}, {cell.ci_high:.3f}]"


def _diff(t: PairedTest) -> str:
    return f"{t.mean_diff:+.3f} [{t.ci_low:+.3f}, {t.ci_high:+.3f}]"


def _header(c: Collections) -> list[str]:
    """The column names: each collection (marked when outside the average), then the average."""
    cols = [n if n in c.average else f"{n} (not averaged)" for n in c.names]
    return [*cols, f"average ({n_collections(len(c.average))})"]


def _label(c: Collections, metric: str, label: str) -> str:
    if metric != "jaccard_topk":
        return label
    ks = sorted({r["retain_top_k"] for by in c.rows.values() for r in by.values()} - {None})
    if len(ks) == 1:
        return f"top-{ks[0]} Jaccard (mean pairwise Jaccard of the retained top-{ks[0]} sets)"
    return f"top-k Jaccard (k = {', '.join(map(str, ks)) or 'not recorded'})"


def metric_tables(c: Collections, cells: Cells) -> list[str]:
    """One table per metric: rows = scorers, columns = collections and the average."""
    head = _header(c)
    lines: list[str] = []
    for metric, label in TABLE_METRICS:
        if not any(k[0] == metric for k in cells):
            continue
        rows = [
            [scorer, *(_fmt(cells.get((metric, scorer, col))) for col in (*c.names, AVERAGE))]
            for scorer in c.scorers
        ]
        lines += [f"**{_label(c, metric, label)}**", ""]
        lines += [*markdown_table(["scorer", *head], rows), ""]
    return lines


def _scope(c: Collections, t: PairedTest) -> str:
    if t.scope != POOLED:
        return t.scope
    if t.collections == len(c.average):
        return f"pooled ({n_collections(t.collections)})"
    return f"pooled ({t.collections} of {n_collections(len(c.average))})"


def tests_table(c: Collections, tests: Sequence[PairedTest]) -> list[str]:
    if not tests:
        return ["No pair of scorers to test (a pair's scorers never ran on one collection)."]
    lines = [
        "Paired over queries (difference = a − b; per collection: seeded paired bootstrap and "
        "paired permutation test; pooled: the mean of the collections' mean differences, "
        "bootstrap stratified by collection and sign flips within each collection):",
        "",
    ]
    head = ["a − b", "scope", "metric", "queries", "mean difference [95% CI]", "bootstrap p"]
    rows = [
        [
            f"{t.a} − {t.b}",
            _scope(c, t),
            t.metric,
            t.queries,
            _diff(t),
            f"{t.p_value:.3g}",
            f"{t.permutation_p:.3g}",
        ]
        for t in tests
    ]
    return lines + markdown_table([*head, "permutation p"], rows)


@dataclass(frozen=True)
class Goal:
    """The goal's checks for a against b on one scope (a collection or the average)."""

    a: str
    b: str
    tau_ratio: float | None  # a's τ-PSI over b's (None: b's is 0)
    spread: tuple[float, float]  # a's and b's score spread
    tied_share: float  # a's
    collapsed: bool | None  # None: a's scores are not expected grades
    ndcg: PairedTest | None  # a − b in nDCG@10 over the shuffles

    def failures(self) -> list[str]:
        out = []
        if self.tau_ratio is None or self.tau_ratio > 0.5:
            ratio = "undefined" if self.tau_ratio is None else f"{self.tau_ratio:.2f}"
            out.append(f"τ-PSI {ratio} of {self.b}'s: not halved")
        if self.collapsed:
            out.append(
                f"collapsed (score spread {self.spread[0]:.3f} against {self.spread[1]:.3f}, "
                f"tied share {self.tied_share:.3f})"
            )
        if self.ndcg is None:
            out.append("no paired nDCG@10 over the shuffles")
        elif self.ndcg.ci_low <= 0:
            out.append(
                f"nDCG@10 over the shuffles {_diff(self.ndcg)} against {self.b}'s: not above"
            )
        return out


def goal(
    c: Collections, cells: Cells, tests: Sequence[PairedTest], a: str, b: str, scope: str
) -> Goal | None:
    """The checks on ``scope`` (a collection or ``average``); None when a figure is missing."""
    means = {}
    for who in (a, b):
        for m in ("tau_psi", "score_spread", "tied_share"):
            cell = cells.get((m, who, scope))
            if cell is None:
                return None
            means[who, m] = cell.mean
    spread_a, spread_b = means[a, "score_spread"], means[b, "score_spread"]
    tied = means[a, "tied_share"]
    rows = [c.row(coll, a) for coll in (c.average if scope == AVERAGE else (scope,))]
    paradigm = next((r.get("paradigm") for r in rows if r is not None), None)
    flag = collapsed(
        {"paradigm": paradigm, "score_spread": spread_a, "tied_share": tied},
        {"score_spread": spread_b},
    )
    where = POOLED if scope == AVERAGE else scope
    ndcg = next(
        (t for t in tests if (t.a, t.b, t.metric, t.scope) == (a, b, "ndcg_mean", where)), None
    )
    ratio = means[a, "tau_psi"] / means[b, "tau_psi"] if means[b, "tau_psi"] else None
    return Goal(a, b, ratio, (spread_a, spread_b), tied, flag, ndcg)


def verdict_lines(
    c: Collections, cells: Cells, tests: Sequence[PairedTest], pair: tuple[str, str]
) -> list[str]:
    """The verdict on the average over collections, then the collections where it fails."""
    a, b = pair
    avg = goal(c, cells, tests, a, b, AVERAGE)
    where = f"on the average over {n_collections(len(c.average))} ({', '.join(c.average)})"
    lines = [
        f"Goal: {a}'s τ-PSI at most half of {b}'s, no collapse (score spread at least half of "
        f"{b}'s, tied share at most 0.5), nDCG@10 over the shuffles above {b}'s (the paired "
        "95% CI of the difference above 0).",
        "",
    ]
    if avg is None:
        lines.append(f"**Not judged** {where}: {a} or {b} lacks a figure on one of them.")
    elif not avg.failures():
        assert avg.tau_ratio is not None and avg.ndcg is not None
        lines.append(
            f"**Holds** {where}: {a}'s τ-PSI is {avg.tau_ratio:.2f} of {b}'s (halved), "
            f"{'no collapse' if avg.collapsed is False else 'collapse not applicable'} "
            f"(score spread {avg.spread[0]:.3f} against {avg.spread[1]:.3f}, tied share "
            f"{avg.tied_share:.3f}), nDCG@10 over the shuffles {_diff(avg.ndcg)} above {b}'s "
            "(pooled, stratified by collection)."
        )
    else:
        lines.append(f"**Does not hold** {where}: {'; '.join(avg.failures())}.")
    failing = []
    for coll in c.names:
        g = goal(c, cells, tests, a, b, coll)
        name = coll if coll in c.average else f"{coll} (not averaged)"
        if g is None:
            failing.append(f"{name}: {a} or {b} not run")
        elif g.failures():
            failing.append(f"{name}: {'; '.join(g.failures())}")
    lines += [
        "",
        "Collections where it does not hold: " + " — ".join(failing) + "."
        if failing
        else f"It holds on every collection ({', '.join(c.names)}).",
    ]
    return lines


def cost_lines(c: Collections) -> list[str]:
    """PSI CPU seconds per collection and summed (unit_costs.jsonl; — where a collection's
    were not all recorded), prompt tokens per shuffled presentation (mean over collections)."""
    table = []
    for scorer in c.scorers:
        rows = {coll: c.row(coll, scorer) for coll in c.names}
        ran = {coll: r for coll, r in rows.items() if r is not None}
        cpu = {coll: r["psi_cpu_seconds"] for coll, r in ran.items()}
        total = "—" if None in cpu.values() else f"{sum(cpu.values()):.0f}"
        if len(ran) < len(rows):
            total += f" ({len(ran)} of {len(rows)} collections)"
        by = ", ".join(f"{k} {'—' if v is None else f'{v:.0f}'}" for k, v in cpu.items())
        tokens = [r["tokens_per_shuffled_presentation"] for r in ran.values()]
        known = [t for t in tokens if t is not None]
        tok = "—" if not known else f"{sum(known) / len(known):.0f}"
        if known and len(known) < len(rows):
            tok += f" ({len(known)} of {len(rows)} collections)"
        table.append([scorer, total, by, tok])
    head = ["scorer", "PSI CPU s, all collections", "PSI CPU s by collection"]
    by_scorer = [
        {"scorer": s, "cpus": sorted({p for r in c.rows.values() if s in r for p in r[s]["cpus"]})}
        for s in c.scorers
    ]
    line = processors_line(by_scorer)
    if any(p.startswith("GPU ") for r in by_scorer for p in r["cpus"]):
        line += (
            " On a GPU the CPU seconds are the host process's; the GPU's own time is not in them."
        )
    return [
        *markdown_table(
            [*head, "prompt tokens per shuffled presentation (mean over collections)"], table
        ),
        "",
        line,
    ]


def collections_table(
    root: str | Path,
    average: Sequence[str] | None = None,
    pairs: Sequence[tuple[str, str]] = DEFAULT_PAIRS,
    seed: int = 0,
) -> str:
    """The Markdown of the multi-collection table for the run folders under ``root``."""
    c = load_collections(root, average)
    cells = metric_cells(c, seed)
    tests = paired_tests(c, pairs, seed)
    others = [n for n in c.names if n not in c.average]
    lines = [
        f"Collections: {', '.join(c.names)}; the average is over {', '.join(c.average)}"
        + (f" ({', '.join(others)}: another axis, not averaged)" if others else "")
        + ". Cells: mean over the collection's queries [95% CI], the query bootstrap of "
        "psi_metrics.json (nDCG@10 in the given order: metrics.json's per-query values, a "
        f"seeded percentile bootstrap); the average: the mean of the collection means, its CI "
        f"a bootstrap stratified by collection (queries resampled within each; seed {seed}).",
        "",
        *metric_tables(c, cells),
        *tests_table(c, tests),
        "",
    ]
    if pairs:
        lines += [*verdict_lines(c, cells, tests, pairs[0]), ""]
    lines += ["Cost (the PSI step, M shuffled presentations per query):", "", *cost_lines(c)]
    return "\n".join(lines) + "\n"
