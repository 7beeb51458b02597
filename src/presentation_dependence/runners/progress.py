"""Progress of a long loop: a tqdm bar on a terminal, periodic log lines without one.

tqdm switches itself off when stderr is not a terminal (batch jobs, ``nohup``, CI), and then
nothing would say how far a job is. :func:`progress` keeps tqdm's bar on a terminal; otherwise it
logs one line at the start, then every ``every_n`` items or ``every_s`` seconds, whichever comes
first, and at the end::

    rerank example-dl19: 12/43 queries (28%), 4.1 s/query, ETA 0:02:07

Defaults: every tenth of the loop, and every ``PRESDEP_PROGRESS_SECONDS`` seconds (60).
"""

from __future__ import annotations

import logging
import math
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import timedelta
from typing import IO, TypeVar

from tqdm.auto import tqdm

__all__ = ["progress"]

log = logging.getLogger(__name__)
T = TypeVar("T")


def _line(desc: str, done: int, total: int, unit: str, elapsed: float) -> str:
    pct = f" ({100 * done / total:.0f}%)" if total else ""
    units = unit[:-1] + "ies" if unit.endswith("y") else unit + "s"
    text = f"{desc}: {done}/{total} {units}{pct}"
    if done:
        per = elapsed / done
        eta = timedelta(seconds=round(per * (total - done)))
        text += f", {per:.2f} s/{unit}, ETA {eta}"
    return text


def progress(
    items: Sequence[T],
    desc: str,
    unit: str = "item",
    *,
    every_n: int | None = None,
    every_s: float | None = None,
    stream: IO[str] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> Iterator[T]:
    """Yield ``items``; show progress as a bar on a terminal, as log lines otherwise."""
    stream = stream if stream is not None else sys.stderr
    if stream.isatty():
        yield from tqdm(items, desc=desc, unit=unit, file=stream)
        return
    total = len(items)
    n_step = every_n if every_n is not None else max(1, math.ceil(total / 10))
    s_step = (
        every_s if every_s is not None else float(os.environ.get("PRESDEP_PROGRESS_SECONDS", "60"))
    )
    start = last_t = clock()
    last_n = 0
    log.info("%s", _line(desc, 0, total, unit, 0.0))
    for done, item in enumerate(items, start=1):
        yield item
        now = clock()
        if done == total or done - last_n >= n_step or now - last_t >= s_step:
            log.info("%s", _line(desc, done, total, unit, now - start))
            last_n, last_t = done, now
