"""The report's plots (matplotlib, Agg backend). Each returns PNG bytes."""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from presentation_dependence.optional import import_optional

__all__ = [
    "base_tau_psi",
    "chips_figure",
    "learning_curve",
    "mean_grade_by_slot",
    "slot_means_figure",
    "tau_psi_figure",
]


def _plt() -> Any:
    """matplotlib's pyplot on the Agg backend; without matplotlib, the 'analysis' extra's error."""
    matplotlib = import_optional("matplotlib", extra="analysis", purpose="the report's plots")
    matplotlib.use("Agg")
    return import_optional("matplotlib.pyplot", extra="analysis", purpose="the report's plots")


def _png(fig: Any) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight", metadata={"Software": None})
    _plt().close(fig)
    return buf.getvalue()


def chips_figure(
    docids: Sequence[str],
    orders: Sequence[np.ndarray],
    retained: Sequence[frozenset[int]],
    labels: Sequence[str],
    grades: np.ndarray,
    title: str,
) -> Any:
    """The same candidates in two presentations, one row each, in slot order (slots 1..n).

    A chip is solid where the candidate is retained in that presentation, outlined where it is
    not; a red edge marks candidates the two presentations decide differently. The number in a
    chip is the candidate's first-stage rank; its colour the qrels grade (legend).
    """
    plt = _plt()
    n = len(docids)
    fig, ax = plt.subplots(figsize=(max(6.0, 0.42 * n), 1.6 + 0.9 * len(orders)))
    disagree = retained[0] ^ retained[1] if len(retained) == 2 else frozenset()
    colour_of = _grade_colours(plt, grades)
    for row, (order, keep) in enumerate(zip(orders, retained, strict=True)):
        y = len(orders) - 1 - row
        for slot, i in enumerate(order):
            _chip(plt, ax, slot, y, int(i), colour_of[int(grades[i])], keep, disagree)
        ax.text(-0.2, y + 0.5, labels[row], ha="right", va="center", fontsize=8)
    _chips_axes(plt, ax, n, len(orders), title, colour_of)
    return fig


def _chip(
    plt: Any,
    ax: Any,
    slot: int,
    y: int,
    i: int,
    colour: Any,
    keep: frozenset[int],
    disagree: frozenset[int],
) -> None:
    """Candidate ``i`` at ``slot`` of row ``y``: solid when kept, a red edge on disagreement."""
    solid = i in keep
    ax.add_patch(
        plt.Rectangle(
            (slot + 0.08, y + 0.1),
            0.84,
            0.8,
            facecolor=colour if solid else "white",
            edgecolor="crimson" if i in disagree else colour,
            linewidth=2.5 if i in disagree else 1.2,
        )
    )
    ax.text(
        slot + 0.5,
        y + 0.5,
        str(i + 1),
        ha="center",
        va="center",
        fontsize=7,
        color="white" if solid else "black",
    )


def _chips_axes(
    plt: Any, ax: Any, n: int, rows: int, title: str, colour_of: Mapping[int, Any]
) -> None:
    """The chips plot's axes: slot ticks, the caption, the title and the grade legend."""
    ax.set_xlim(-0.1, n + 0.1)
    ax.set_ylim(0, rows)
    step = max(1, n // 20)
    ax.set_xticks(np.arange(0, n, step) + 0.5, [str(j + 1) for j in range(0, n, step)], fontsize=7)
    ax.set_xlabel(
        "slot in the prompt, 1 = first (number = first-stage rank, colour = qrels grade; "
        "solid = retained, red edge = the presentations disagree)",
        fontsize=8,
    )
    ax.set_yticks([])
    ax.set_title(title, fontsize=9)
    handles = [
        plt.Rectangle((0, 0), 1, 1, facecolor=c, edgecolor=c, label=f"grade {g}")
        for g, c in sorted(colour_of.items())
    ]
    ax.legend(
        handles=handles,
        title="qrels",
        fontsize=7,
        title_fontsize=7,
        loc="upper left",
        bbox_to_anchor=(1.0, 1.0),
        frameon=False,
    )
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)


def _grade_colours(plt: Any, grades: np.ndarray) -> dict[int, Any]:
    """One viridis colour per grade present (and 0..max), as the legend shows them."""
    cmap = plt.get_cmap("viridis")
    gmax = max(int(grades.max()), 1) if grades.size else 1
    present = {int(g) for g in grades} | set(range(gmax + 1))
    return {g: cmap(0.15 + 0.75 * max(g, 0) / gmax) for g in sorted(present)}


def tau_psi_figure(rows: Sequence[Mapping[str, Any]]) -> Any:
    """τ-PSI with its interval per (run, variant); the same-order null grey and hatched.

    Every bar carries its value, and a bar at 0 (a deterministic null) is drawn as a thick grey
    line, so "zero" is visibly a measured 0, not a missing bar.
    """
    plt = _plt()
    fig, ax = plt.subplots(figsize=(max(5.0, 0.9 * len(rows)), 3.2))
    x = np.arange(len(rows))
    means = np.array([r["mean"] for r in rows])
    err = np.array(
        [[r["mean"] - r["ci_low"] for r in rows], [r["ci_high"] - r["mean"] for r in rows]]
    )
    top = max(0.55, float((means + err[1]).max()) + 0.05)
    for i, r in enumerate(rows):
        ax.bar(
            x[i],
            means[i],
            yerr=err[:, i : i + 1],
            color="#bbbbbb" if r["null"] else "#3b6ea8",
            hatch="//" if r["null"] else None,
            capsize=3,
            edgecolor="black",
            linewidth=0.5,
        )
        if means[i] < 0.005 * top:  # invisible as a bar: draw the zero
            ax.hlines(
                0, x[i] - 0.4, x[i] + 0.4, colors="#777777", linewidth=3, zorder=3, gid="zero"
            )
        ax.text(x[i], means[i] + err[1, i] + 0.01 * top, f"{means[i]:.3f}", ha="center", fontsize=7)
    ax.set_xticks(x, [r["label"] for r in rows], rotation=30, ha="right", fontsize=8)
    ax.axhline(0.5, color="grey", linestyle=":", linewidth=1)
    ax.set_ylabel("τ-PSI = (1 − mean τ)/2")
    ax.set_title(
        "Order instability with 95% bootstrap intervals (grey hatched: same-order null; "
        "dotted: uncorrelated)",
        fontsize=9,
    )
    ax.set_ylim(0, top)
    return fig


def mean_grade_by_slot(
    series: Mapping[str, tuple[np.ndarray, np.ndarray]], ylabel: str = "mean score"
) -> bytes:
    """PNG of :func:`slot_means_figure`."""
    return _png(slot_means_figure(series, ylabel))


def slot_means_figure(
    series: Mapping[str, tuple[np.ndarray, np.ndarray]], ylabel: str = "mean score"
) -> Any:
    """Mean score by slot under shuffled presentations (content averages out; the slot remains).

    One line per series. Slots are 1-based integers; the axis ticks only integers. ``ylabel``
    says what the scores are ("mean score (expected grade)" for a grade readout only).
    """
    plt = _plt()
    from matplotlib.ticker import MaxNLocator

    fig, ax = plt.subplots(figsize=(6.0, 3.2))
    for label, (slots, means) in series.items():
        ax.plot(slots, means, marker="o", markersize=3, label=label.lstrip("_"))
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("slot in the prompt (1 = first)")
    ax.set_ylabel(ylabel)
    ax.set_title("Mean score by slot over shuffled presentations", fontsize=9)
    ax.legend(fontsize=7)
    return fig


def base_tau_psi(series: Mapping[str, Sequence[Mapping[str, float]]]) -> float | None:
    """The base model's held-out τ-PSI (the step-0 point; the students of one curve share
    it), which the learning curve's goal line halves; None without a step-0 point."""
    for rows in series.values():
        for r in rows:
            if int(r["step"]) == 0:
                return float(r["tau_psi"])
    return None


def learning_curve(series: Mapping[str, Sequence[Mapping[str, float]]]) -> bytes:
    """τ-PSI and nDCG@10 over shuffles on held-out queries against training steps, per student."""
    plt = _plt()
    fig, (left, right) = plt.subplots(1, 2, figsize=(9.0, 3.2))
    for label, rows in series.items():
        steps = [int(r["step"]) for r in rows]
        left.plot(steps, [r["ndcg_mean"] for r in rows], marker="o", markersize=3, label=label)
        right.plot(steps, [r["tau_psi"] for r in rows], marker="o", markersize=3, label=label)
    left.set_xlabel("training steps (queries seen)")
    left.set_ylabel("nDCG@10 over shuffles (held-out)")
    right.set_xlabel("training steps (queries seen)")
    right.set_ylabel("τ-PSI (held-out)")
    title = "Learning curve"
    base = base_tau_psi(series)
    if base is not None:  # the goal: half the base model's τ-PSI
        right.axhline(base / 2, color="grey", linestyle=":", linewidth=1)
        title += f" (dotted: τ-PSI {base / 2:.3f}, half the base model's {base:.3f})"
    top = max([float(r["tau_psi"]) for rows in series.values() for r in rows], default=0.5)
    right.set_ylim(0, max(0.55, top * 1.1))
    left.legend(fontsize=7)
    fig.suptitle(title, fontsize=9)
    return _png(fig)
