"""Progress without a terminal: periodic log lines (tqdm disables itself off-terminal)."""

from __future__ import annotations

import io
import logging

import pytest

from presentation_dependence.runners.progress import progress


class _Clock:
    """A fake monotonic clock: each call advances by ``step`` seconds."""

    def __init__(self, step: float) -> None:
        self.t, self.step = 0.0, step

    def __call__(self) -> float:
        self.t += self.step
        return self.t


def _lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name.endswith("progress")]


def test_lines_every_n_items_and_at_the_end(caplog) -> None:
    caplog.set_level(logging.INFO)
    items = list(range(7))
    out = list(progress(items, "rerank x", "query", every_n=3, every_s=1e9, stream=io.StringIO()))
    assert out == items
    lines = _lines(caplog)
    assert [ln.split(":")[1].split()[0] for ln in lines] == ["0/7", "3/7", "6/7", "7/7"]
    assert "s/query, ETA" in lines[-1] and lines[-1].startswith("rerank x: 7/7 queries (100%)")


def test_lines_every_s_seconds(caplog) -> None:
    caplog.set_level(logging.INFO)
    clock = _Clock(step=10.0)  # 10 s per item
    list(
        progress(
            range(5), "psi", "query", every_n=100, every_s=25, stream=io.StringIO(), clock=clock
        )
    )
    done = [ln.split(":")[1].split()[0] for ln in _lines(caplog)]
    assert done == ["0/5", "3/5", "5/5"]  # 30 s after the start, then the end


def test_terminal_gets_tqdm_not_log_lines(caplog) -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    caplog.set_level(logging.INFO)
    stream = Tty()
    assert list(progress([1, 2], "x", stream=stream)) == [1, 2]
    assert _lines(caplog) == [] and "2/2" in stream.getvalue()
