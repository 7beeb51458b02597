"""A run folder's summary and evidence, copied where git keeps them: what its tables are
rendered and recomputed from.

A run folder also holds what is too big or not ours to commit (per-query results with the
candidates' texts, resume parts, checkpoints). Its summary files are small and text-free, and
every table of the docs is rendered from them (``presdep study table`` reads
``resolved_config.yaml``, ``metrics.json`` and ``psi/psi_metrics.json``). With them go the
*evidence* the summaries are computed from, ids and numbers only: ``run.trec`` (the given-order
reranking), ``qrels.txt`` (the judgements it was evaluated against) and
``psi/grade_distributions.npz`` (every query x presentation x candidate: score, P(g), slot and
grade), from which ``robustness/recompute.py`` recomputes ``metrics.json`` and
``psi/psi_metrics.json`` with no model. ``presdep study archive`` copies them, e.g. to
``docs/results/content-study/dl19/<scorer>/``, as each run finishes, so that a doc block can be
rendered again, and recomputed, from a clean clone after the run folders are gone (a long study
spans sessions and machines).
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Sequence
from pathlib import Path

from presentation_dependence.errors import ConfigError
from presentation_dependence.io.atomic import atomic_write_bytes

__all__ = ["SUMMARY_FILES", "archive_summaries", "archive_summary", "summary_files"]

log = logging.getLogger(__name__)

# Summary files by name, wherever they are in a run folder (a judge study nests a rerun folder in
# each judge folder). None holds a candidate's or an item's text; judge records hold the judge's
# own output (verdicts, generated judgements), not the responses judged. The evidence files hold
# ids, ranks, grades and scores only (tests/studies/test_archive.py checks for texts).
SUMMARY_FILES = frozenset(
    {
        "resolved_config.yaml",
        "provenance.json",
        "metrics.json",
        "psi_metrics.json",  # psi/
        "presentations.json",  # psi/: every seeded permutation
        "qa_metrics.json",  # qa/
        "lambda_selection.json",
        "lambda_choice.json",
        "lambda_curve.md",
        "base_heldout_eval.json",
        "records.jsonl",  # a judge sweep
        "summary.json",
        "study_timing.json",
        "gate_verdict.json",
        "ranking_summary.json",
        "noise.json",
        "unit_costs.jsonl",  # each resume unit's wall and CPU seconds (runners/costs.py)
        # the evidence the summaries are recomputed from (robustness/recompute.py)
        "run.trec",  # qid Q0 docid rank score tag: the given-order reranking
        "qrels.txt",  # qid 0 docid grade: the judgements metrics.json was computed against
        "grade_distributions.npz",  # psi/: every query x presentation x candidate, ids only
    }
)
RERUN_RECORDS = re.compile(r"^run\d+\.jsonl$")  # noise/<condition>/run<r>.jsonl
# Folders never entered: per-query results and score arrays, resume parts, locks, weights.
SKIPPED = re.compile(
    r"^(per_query_results|per_query|records_parts|run\d+|\.locks|checkpoints|snapshots|adapter)$"
)


def summary_files(folder: Path) -> list[Path]:
    """The summary files under ``folder`` (relative paths, sorted)."""
    found = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if not SKIPPED.match(d)]
        for name in files:
            if name in SUMMARY_FILES or RERUN_RECORDS.match(name):
                found.append((Path(root) / name).relative_to(folder))
    return sorted(found)


def archive_summary(source: str | Path, dest: str | Path) -> list[Path]:
    """Copy the summary files of run folder ``source`` into ``dest`` (same relative paths, each
    written atomically); a plain file is copied into ``dest`` by name. Returns the written
    paths; a folder without any summary file is an error."""
    src, out = Path(source), Path(dest)
    if src.is_file():
        return [atomic_write_bytes(out / src.name, src.read_bytes())]
    if not src.is_dir():
        raise ConfigError(f"{src}: no such run folder or file")
    found = summary_files(src)
    if not found:
        raise ConfigError(
            f"{src} holds none of a run folder's summary files ({', '.join(sorted(SUMMARY_FILES))})."
            " Fix: name a finished run folder"
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
