"""The report's plots: integer 1-based slots, a visible zero for the null, a grade legend."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from presentation_dependence.report import figures


def _tick_labels(ax) -> list[str]:
    ax.figure.canvas.draw()
    return [t.get_text() for t in ax.get_xticklabels() if t.get_text()]


def test_slot_axis_has_integer_ticks() -> None:
    fig = figures.slot_means_figure(
        {"run / shuffle": (np.arange(1, 5), np.array([1.2, 1.0, 0.9, 1.1]))}
    )
    labels = _tick_labels(fig.axes[0])
    assert labels and all(lab.lstrip("−-").isdigit() for lab in labels)
    assert figures.mean_grade_by_slot({"a": (np.arange(1, 3), np.ones(2))})[:4] == b"\x89PNG"


def test_chips_are_one_based_with_a_grade_legend() -> None:
    grades = np.array([2, 0, 1, 0, 0])
    orders = [np.arange(5), np.array([4, 3, 2, 1, 0])]
    fig = figures.chips_figure(
        [f"d{i}" for i in range(5)],
        orders,
        [frozenset({0, 1}), frozenset({4, 3})],
        ["given order", "shuffle #1"],
        grades,
        "title",
    )
    ax = fig.axes[0]
    assert _tick_labels(ax) == ["1", "2", "3", "4", "5"]
    legend = ax.get_legend()
    assert legend is not None
    assert [t.get_text() for t in legend.get_texts()] == ["grade 0", "grade 1", "grade 2"]


def test_null_bar_at_zero_is_drawn_and_labelled() -> None:
    rows = [
        {
            "label": "run\\nrandom_shuffle",
            "null": False,
            "mean": 0.3,
            "ci_low": 0.2,
            "ci_high": 0.4,
        },
        {"label": "run\\nsame_order", "null": True, "mean": 0.0, "ci_low": 0.0, "ci_high": 0.0},
    ]
    ax = figures.tau_psi_figure(rows).axes[0]
    zero_lines = [c for c in ax.collections if c.get_gid() == "zero"]
    assert len(zero_lines) == 1  # the null's zero, drawn as a line
    assert {t.get_text() for t in ax.texts} == {"0.300", "0.000"}
    assert ax.patches[1].get_hatch() == "//"
