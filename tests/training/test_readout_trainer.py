"""``training/readout_trainer.py``: the callbacks that do not change what a run computes."""

from __future__ import annotations

import sys

import pytest

pytest.importorskip("transformers")

from presentation_dependence.training.readout_trainer import TrimHeap


def test_trim_heap_trims_after_every_step() -> None:
    calls: list[int] = []
    trim = TrimHeap()
    trim.trim = lambda pad: calls.append(pad) or 1
    for _ in range(3):
        trim.on_step_end(None, None, None)
    assert calls == [0, 0, 0]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_trim_heap_finds_glibc_malloc_trim() -> None:
    trim = TrimHeap()
    assert trim.trim is not None and trim.trim(0) in (0, 1)


def test_trim_heap_without_malloc_trim_does_nothing() -> None:
    trim = TrimHeap()
    trim.trim = None
    trim.on_step_end(None, None, None)  # no error where the C library has no malloc_trim
