"""Markdown tables of judge runs, rerun noise, comparisons and response ranking.

Every table is rendered from the JSON summaries the runners write, so the numbers in
docs/studies/judge-*.md are the measured ones, untouched by hand.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from presentation_dependence.io.markdown import markdown_table

__all__ = [
    "compare_markdown",
    "fmt",
    "fmt_ci",
    "jsonable",
    "noise_markdown",
    "paired_tests_markdown",
    "ranking_markdown",
    "sweep_markdown",
]


def jsonable(obj: Any) -> Any:
    """A copy with NaN/inf floats as None and tuples as lists (strict JSON)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, Mapping):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    return obj


def fmt(x: Any, digits: int = 3) -> str:
    """A number with ``digits`` decimals; None/NaN as 'n/a'."""
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "n/a"
    if isinstance(x, int):  # bool included
        return str(x)
    return f"{float(x):.{digits}f}"


def fmt_ci(x: Any, low: Any, high: Any) -> str:
    """``x [low, high]``, each as :func:`fmt` writes it."""
    return f"{fmt(x)} [{fmt(low)}, {fmt(high)}]"


def _ci(d: Mapping[str, Any], key: str = "mean") -> str:
    return fmt_ci(d.get(key), d.get("ci_low"), d.get("ci_high"))


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    return "\n".join(markdown_table(header, rows)) + "\n"


def sweep_markdown(s: Mapping[str, Any]) -> str:
    """The judge run: scores under both conventions, parse failures, accuracy by slot."""
    conf = round(100 * s["confidence"])
    f0, fc = s["score_fail0"], s["score_fail_chance"]
    head = _table(
        [
            "items",
            "records",
            "placements/item",
            "parse failures",
            f"failure rate [{conf}% Wilson]",
            f"score, failure = 0 [{conf}% CI]",
            f"score, failure = 1/N [{conf}% CI]",
            "items judged alike in every placement",
        ],
        [
            [
                s["items"],
                s["records"],
                fmt(s["placements_per_item"], 1),
                s["parse_failures"],
                fmt_ci(s["parse_failure_rate"], *s["parse_failure_ci"]),
                _ci(f0),
                _ci(fc),
                fmt(s["consistent_items"]),
            ]
        ],
    )
    slots = _table(
        [
            "correct answer in slot",
            "records",
            "correct",
            f"accuracy [{conf}% Wilson]",
            "parse failures",
            "share of parsed verdicts naming this slot",
        ],
        [
            [
                r["slot"],
                r["n"],
                r["correct"],
                _ci(r, "accuracy"),
                r["parse_failures"],
                fmt(r["named_share"]),
            ]
            for r in s["slots"]
        ],
    )
    sp = s["slot_spread"]
    status = ", ".join(f"{k} {v}" for k, v in s["parse_status"].items())
    finish = ", ".join(f"{k} {v}" for k, v in s["finish"].items())
    return (
        head + "\n" + slots + f"\nSpread between the best and worst slot: {_ci(sp, 'spread')} "
        f"({conf}% percentile bootstrap over items, {s['bootstrap_resamples']} "
        f"resamples).\nParse status: {status}. Generation ended by: {finish}.\n"
    )


def _runs_table(runs: Sequence[Mapping[str, Any]]) -> str:
    """Per run: its condition, index, seconds, accuracy and parse failure rate."""
    return _table(
        ["condition", "run", "seconds", "accuracy (failure = 0)", "parse failure rate"],
        [
            [
                r["condition"],
                r["run"],
                fmt(r["seconds"], 1),
                fmt(r["accuracy"]),
                fmt(r["parse_failure_rate"]),
            ]
            for r in runs
        ],
    )


def _load_table(loads: Sequence[Mapping[str, Any]]) -> str:
    """The served model's load during each run that recorded one (``server_load``)."""
    return _table(
        [
            "condition",
            "run",
            "requests in flight",
            "running requests max / mean",
            "waiting max",
            "preemptions",
            "samples",
        ],
        [
            [
                r["condition"],
                r["run"],
                r["server_load"]["concurrency"],
                f"{fmt(r['server_load']['running_max'], 0)} / "
                f"{fmt(r['server_load']['running_mean'], 1)}",
                fmt(r["server_load"]["waiting_max"], 0),
                fmt(r["server_load"]["preemptions"], 0),
                r["server_load"]["samples"],
            ]
            for r in loads
        ],
    )


def _comparison_row(c: Mapping[str, Any]) -> list[Any]:
    fd = c["first_diff"]
    first = (
        "–"
        if not fd["count"]
        else f"{fd['min']} / {fmt(fd['median'], 1)} / {fd['max']} ({fd['unit']}s)"
    )
    return [
        c["label"],
        c["records"],
        fmt_ci(c["identical_share"], *c["identical_ci"]),
        f"{fmt(c['flip_share'])} ({c['flips']})",
        f"{c['score_change']:+.3f} ± {fmt(c['score_change_se'])}",
        fmt(c["noise_to_se"]),
        first,
    ]


def _comparisons_table(comparisons: Sequence[Mapping[str, Any]]) -> str:
    """Every rerun comparison (:func:`~presentation_dependence.judge.scoring.noise.compare_reruns`)."""
    return _table(
        [
            "comparison",
            "records",
            "identical responses [95% Wilson]",
            "right/wrong flips",
            "score change ± 1 SE",
            "noise ÷ SE",
            "first differing position min / median / max",
        ],
        [_comparison_row(c) for c in comparisons],
    )


def noise_markdown(n: Mapping[str, Any]) -> str:
    """Per-run cost and accuracy (and the server's load, when recorded), then every rerun
    comparison."""
    runs = _runs_table(n["runs"])
    loads = [r for r in n["runs"] if r.get("server_load")]
    if loads:
        runs += (
            "\nThe server during each run (its Prometheus `/metrics`, sampled while it ran):\n\n"
        )
        runs += _load_table(loads)
    return runs + "\n" + _comparisons_table(n["comparisons"])


def compare_markdown(rows: Sequence[tuple[str, str, Mapping[str, Any]]]) -> str:
    """One table of paired comparisons: (label A, label B, :func:`compare_runs` output) each."""
    return _table(
        [
            "A",
            "B",
            "records",
            "A only right",
            "B only right",
            "exact McNemar p",
            "items",
            "score A − B [95% paired bootstrap]",
            "bootstrap p",
        ],
        [
            [
                label_a,
                label_b,
                c["mcnemar"]["n"],
                c["mcnemar"]["a_only"],
                c["mcnemar"]["b_only"],
                fmt(c["mcnemar"]["p_value"]),
                c["paired_bootstrap"]["items"],
                f"{c['paired_bootstrap']['mean_diff']:+.3f} "
                f"[{fmt(c['paired_bootstrap']['ci_low'])}, {fmt(c['paired_bootstrap']['ci_high'])}]",
                fmt(c["paired_bootstrap"]["p_value"]),
            ]
            for label_a, label_b, c in rows
        ],
    )


def paired_tests_markdown(noise: Mapping[str, Any]) -> str:
    """The paired tests of a rerun-noise study (run 0 of each condition against run 0 of the
    first) as one table; '' when it has none."""
    tests = noise.get("paired_tests") or []
    return compare_markdown([(p["a"], p["b"], p) for p in tests]) if tests else ""


def ranking_markdown(s: Mapping[str, Any]) -> str:
    tp = s["tau_psi"] or {}
    return _table(
        [
            "items",
            "presentations",
            f"nDCG@{s['ndcg_k']} [95% CI]",
            f"nDCG@{s['ndcg_k']} of a random order",
            "τ-PSI [95% CI]",
            "pairs",
            "pair flip rate",
            "pairwise accuracy",
        ],
        [
            [
                s["items"],
                s["num_presentations"],
                _ci(s["ndcg"]),
                fmt(s["ndcg_chance"]) if "ndcg_chance" in s else "—",
                _ci(tp),
                s["pairs"],
                fmt(s["pair_flip_rate"]),
                fmt(s["pairwise_accuracy"]),
            ]
        ],
    )
