"""A run folder's summary, copied where git keeps it: the files its tables are rendered from.

A run folder also holds what is too big or not ours to commit (per-query results with the
candidates' texts, score arrays, checkpoints). Its summary files are small and text-free, and
every table of the docs is rendered from them (``presdep study table`` reads
``resolved_config.yaml``, ``metrics.json`` and ``psi/psi_metrics.json``). ``presdep study
archive`` copies them, e.g. to ``docs/results/content-study/dl19/<scorer>/``, as each run
finishes, so that a doc block can be rendered again from a clean clone after the run folders
are gone (a long study spans sessions and machines).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from presentation_dependence.errors import ConfigError
from presentation_dependence.io.atomic import atomic_write_bytes

__all__ = ["SUMMARY_FILES", "archive_summaries", "archive_summary"]

log = logging.getLogger(__name__)

# Relative to a run folder; whichever exist are copied. None holds a candidate's text.
SUMMARY_FILES = (
    "resolved_config.yaml",
    "provenance.json",
    "metrics.json",
    "psi/psi_metrics.json",
    "psi/presentations.json",
    "qa/qa_metrics.json",
    "lambda_selection.json",
    "lambda_curve.md",
    "base_heldout_eval.json",
)


def archive_summary(source: str | Path, dest: str | Path) -> list[Path]:
    """Copy the :data:`SUMMARY_FILES` of run folder ``source`` that exist into ``dest`` (same
    relative paths, each written atomically); a plain file is copied into ``dest`` by name.
    Returns the written paths; a folder without any summary file is an error."""
    src, out = Path(source), Path(dest)
    if src.is_file():
        return [atomic_write_bytes(out / src.name, src.read_bytes())]
    if not src.is_dir():
        raise ConfigError(f"{src}: no such run folder or file")
    found = [rel for rel in SUMMARY_FILES if (src / rel).is_file()]
    if not found:
        raise ConfigError(
            f"{src} holds none of a run folder's summary files ({', '.join(SUMMARY_FILES)}). "
            "Fix: name a finished run folder"
        )
    return [atomic_write_bytes(out / rel, (src / rel).read_bytes()) for rel in found]


def archive_summaries(sources: Sequence[str | Path], dest: str | Path) -> list[Path]:
    """:func:`archive_summary` of each source into ``dest/<source's name>/`` (a plain file into
    ``dest`` itself)."""
    written: list[Path] = []
    for source in sources:
        src = Path(source)
        written += archive_summary(src, Path(dest) if src.is_file() else Path(dest) / src.name)
        log.info("archived %s into %s", src, dest)
    return written
