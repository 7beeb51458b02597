"""Learning curves: every saved checkpoint of a student scored on held-out queries.

For the base model (step 0) and each adapter snapshot ``<output_dir>/snapshots/step-<N>/``
(written at every checkpoint when ``train.keep_snapshots`` is on) and the final ``adapter/``,
the student is served through the ordinary reranker with
``adapter_path`` and scored on ``max_queries`` held-out queries of the config's
``splits.heldout`` (each source's share proportional to its size: :func:`.splits.stratified_head`)
in their given order and under M seeded shuffles
(:func:`~presentation_dependence.training.lambda_select.evaluate_heldout`): nDCG@10 in the
given order and over the shuffles, τ-PSI, the score spread. Each point is cached in
``<output_dir>/curve/step-<step>.json`` with the key it was made from, so an interrupted curve
resumes point by point; ``curve.json`` gathers them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from presentation_dependence.errors import PresdepError
from presentation_dependence.io.atomic import atomic_write_text
from presentation_dependence.io.markdown import markdown_table
from presentation_dependence.metrics.stats import paired_bootstrap
from presentation_dependence.seeding import rng_from
from presentation_dependence.training.config import TrainingConfig, load_training_config
from presentation_dependence.training.heldout_curve import (
    checkpoint_adapters,
    curve_point,
    heldout_head,
)

__all__ = ["checkpoint_adapters", "curve_doc", "curve_markdown", "curve_paired", "curve_series"]
__all__ += ["learning_curve_points"]


def curve_series(
    config_paths: Sequence[str | Path],
    overrides: Sequence[str] = (),
    *,
    num_presentations: int = 4,
    seed: int = 0,
    max_queries: int | None = 40,
    every: int = 1,
    steps: Sequence[int] | None = None,
    per_query: bool = False,
) -> dict[str, list[dict[str, Any]]]:
    """:func:`learning_curve_points` of each training config, by config id, the base model
    measured once per serving; an error for a config with no trained adapter or snapshot."""
    series = {}
    base_points: dict[str, dict[str, Any]] = {}  # the base model measured once per serving
    for path in config_paths:
        cfg = load_training_config(path, overrides)
        if not checkpoint_adapters(cfg.resolved_output_dir, every, steps):
            raise PresdepError(
                f"{path}: no trained adapter or snapshot under {cfg.resolved_output_dir} (a curve "
                f"of the base model alone says nothing); train it first: presdep train {path}"
            )
        series[cfg.id] = learning_curve_points(
            cfg,
            num_presentations=num_presentations,
            seed=seed,
            max_queries=max_queries,
            every=every,
            steps=steps,
            base_points=base_points,
            per_query=per_query,
        )
    return series


def learning_curve_points(
    cfg: TrainingConfig,
    *,
    num_presentations: int = 4,
    seed: int = 0,
    max_queries: int | None = 40,
    every: int = 1,
    steps: Sequence[int] | None = None,
    base_points: dict[str, dict[str, Any]] | None = None,
    per_query: bool = False,
    include_base: bool = True,
) -> list[dict[str, Any]]:
    """One held-out measurement per checkpoint of ``cfg``'s student
    (:func:`~presentation_dependence.training.heldout_curve.curve_point`: cached, resumable):
    the base model (step 0; not with ``include_base`` False), the snapshots whose step is a
    multiple of ``every`` (or one of ``steps``), the final adapter; gathered in
    ``<output_dir>/curve.json``."""
    out = cfg.resolved_output_dir
    heldout = heldout_head(cfg, max_queries)
    base: list[tuple[int, Path | None]] = [(0, None)] if include_base else []
    todo = [*base, *checkpoint_adapters(out, every, steps)]
    points = [
        curve_point(
            cfg,
            heldout,
            step,
            adapter,
            num_presentations=num_presentations,
            seed=seed,
            base_points=base_points,
            per_query=per_query,
        )
        for step, adapter in todo
    ]
    atomic_write_text(out / "curve.json", json.dumps(points, indent=1) + "\n")
    return points


def curve_markdown(series: dict[str, list[dict[str, Any]]]) -> str:
    """The learning curves as one table: a row per (student, checkpoint)."""
    head = ["student", "step", "held-out queries", "nDCG@10 (given order)"]
    head += ["nDCG@10 over shuffles", "τ-PSI", "score variance across presentations"]
    rows = [
        [
            name,
            p["step"],
            p["num_queries"],
            f"{p['ndcg_given']:.3f}",
            f"{p['ndcg_mean']:.3f}",
            f"{p['tau_psi']:.3f}",
            f"{p['score_var']:.4f}",
        ]
        for name, points in series.items()
        for p in points
    ]
    return "\n".join(markdown_table(head, rows)) + "\n"


def curve_paired(series: dict[str, list[dict[str, Any]]], reference: str, *, seed: int = 0) -> str:
    """Each student's last point against ``reference``'s last point, paired over the held-out
    queries: mean difference (student − reference) with its seeded paired-bootstrap 95% CI
    (:func:`~presentation_dependence.metrics.stats.paired_bootstrap`), for nDCG@10 over the
    shuffles and τ-PSI."""
    if reference not in series:
        raise ValueError(f"--paired-against {reference!r}: not one of {', '.join(series)}")
    ref = series[reference][-1]
    rows = []
    for name, points in series.items():
        last = points[-1]
        if name == reference:
            continue
        if "per_query" not in last or "per_query" not in ref:
            raise ValueError(f"{name}: points without per-query scores (measure with per_query)")
        keys = sorted(set(last["per_query"]) & set(ref["per_query"]))
        cells = []
        for metric in ("ndcg_mean", "tau_psi"):
            a = [last["per_query"][q][metric] for q in keys]
            b = [ref["per_query"][q][metric] for q in keys]
            r = paired_bootstrap(a, b, rng=rng_from(seed, name, metric))
            cells.append(f"{r['mean_diff']:+.3f} [{r['ci_low']:+.3f}, {r['ci_high']:+.3f}]")
        rows.append([name, last["step"], len(keys), *cells])
    head = ["student", "step", "queries", "ΔnDCG@10 over shuffles [95% CI]", "Δτ-PSI [95% CI]"]
    lines = [
        f"Paired over the held-out queries against `{reference}` at its last step (difference = "
        "student − reference; seeded paired bootstrap, 95% CI):",
        "",
        *markdown_table(head, rows),
    ]
    return "\n".join(lines) + "\n"


def curve_doc(
    series: dict[str, list[dict[str, Any]]],
    *,
    paired_against: str | None = None,
    seed: int = 0,
    figure: str | None = None,
) -> str:
    """The curves' doc block: :func:`curve_markdown`, with ``paired_against`` the
    :func:`curve_paired` comparison, with ``figure`` (a path relative to the doc) its link."""
    text = curve_markdown(series)
    if paired_against is not None:
        text += "\n" + curve_paired(series, paired_against, seed=seed)
    if figure:
        text += f"\n![Learning curves on the held-out split]({figure})\n"
    return text
