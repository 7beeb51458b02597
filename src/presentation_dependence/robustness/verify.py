"""Re-score archived presentations and compare: does this machine reproduce a committed result?

A PSI folder (or its archive, ``presdep study archive``) keeps every presentation it scored
(``psi/presentations.json``) and every score (``psi/grade_distributions.npz``). :func:`rescore`
scores the first ``queries`` queries under their first ``presentations`` shuffles again with a
reranker and compares score by score. On the processor kind that made the archive (the
``cpu`` of its ``unit_costs.jsonl`` lines) the readout repeats bit for bit, so the check
demands equality there; elsewhere bfloat16 kernels differ (docs/studies/judge-study.md's cross-machine
reruns), and the check allows ``tolerance`` on every expected grade. A shipped student is
re-scored in the dtype its archive ran in (:func:`archive_dtype`), not in this machine's
``dtype: auto`` (float32 on a CPU without native bfloat16, readout/speed.py).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from presentation_dependence.config.loader import load_config
from presentation_dependence.data import load_dataset
from presentation_dependence.data.config import DataConfig
from presentation_dependence.errors import PresdepError
from presentation_dependence.fields import build_dataclass
from presentation_dependence.presentations import score_presentations
from presentation_dependence.provenance import cpu_info, cpu_label
from presentation_dependence.records import RerankRequest
from presentation_dependence.rerankers.base import Reranker
from presentation_dependence.rerankers.students import shipped_student
from presentation_dependence.robustness.store import columnar_docids, load_columnar
from presentation_dependence.runners.costs import unit_processors
from presentation_dependence.runners.readback import read_provenance

__all__ = ["CROSS_PROCESSOR_TOLERANCE", "ArchiveCheck", "Rescore", "load_checks", "rescore"]
__all__ += ["archive_dtype", "run_check"]

# The largest |ΔE[g]| accepted on another processor kind. Measured on the shipped
# order-averaged student's check (2 DL19 queries x 2 shuffles, 80 scores) against its archive
# from an AMX CPU: an AVX2-only AMD EPYC (2026-12-04), which emulates bfloat16, moved expected
# grades by up to 0.107 in bfloat16 and 0.061 in float32; the dtype check of its export saw
# 0.075 between bfloat16 and float32. A wrong adapter or model moves them by far more (the
# trained students and the off-the-shelf readout differ by tenths to whole grades).
CROSS_PROCESSOR_TOLERANCE = 0.15


@dataclass(frozen=True)
class Rescore:
    """What a re-score found: queries, presentations and scores compared, the largest
    difference, whether this processor is the archive's, and the verdict."""

    archive: str
    variant: str
    queries: tuple[str, ...]
    presentations: int
    scores: int
    max_abs_diff: float
    same_processor: bool
    tolerance: float

    @property
    def ok(self) -> bool:
        return self.max_abs_diff <= self.tolerance

    def line(self) -> str:
        rule = "identical required" if self.same_processor else f"within {self.tolerance:g}"
        return (
            f"{self.archive}: {self.scores} scores of {len(self.queries)} queries × "
            f"{self.presentations} presentations ({self.variant}): max |Δ| {self.max_abs_diff:.3g} "
            f"({rule}: {'ok' if self.ok else 'FAILED'})"
        )


def _presentations(archive: Path) -> dict[str, dict[str, list[list[int]]]]:
    path = archive / "psi" / "presentations.json"
    if not path.is_file():
        raise PresdepError(f"{archive} holds no psi/presentations.json to re-score")
    table: dict[str, dict[str, list[list[int]]]] = json.loads(path.read_text("utf-8"))[
        "presentations"
    ]
    return table


def rescore(
    reranker: Reranker,
    archive: str | Path,
    requests: Sequence[RerankRequest],
    *,
    queries: int = 2,
    presentations: int = 2,
    variant: str = "random_shuffle",
    tolerance: float = CROSS_PROCESSOR_TOLERANCE,
) -> Rescore:
    """Score the archive's first ``presentations`` presentations of ``variant`` for the first
    ``queries`` of ``requests`` (their candidates in the archived input order) and compare."""
    archive = Path(archive)
    columnar = archive / "psi" / "grade_distributions.npz"
    if not columnar.is_file():
        raise PresdepError(f"{archive} holds no psi/grade_distributions.npz to compare against")
    stored, perms = load_columnar(columnar), _presentations(archive)
    docids = columnar_docids(columnar)
    here = cpu_label(cpu_info())
    made_on = unit_processors(archive, "psi")
    diffs, same, done = [], True, []
    for req in requests[:queries]:
        qid = req.query.qid
        if qid not in stored or variant not in stored[qid]:
            raise PresdepError(f"{archive} has no {variant} scores of query {qid!r}")
        if tuple(c.docid for c in req.candidates) != docids[qid]:
            raise PresdepError(
                f"query {qid!r}: the candidates differ from {archive}'s (ids or order); "
                "re-score with the data the archive was made from"
            )
        p = np.asarray(perms[qid][variant][:presentations], dtype=np.int64)
        got = score_presentations(reranker, req.query, req.candidates, p).scores
        want = stored[qid][variant][: len(p)]
        if got.shape != want.shape:
            raise PresdepError(
                f"query {qid!r}: {got.shape[1]} candidates here, {want.shape[1]} in {archive}"
            )
        diffs.append(float(np.max(np.abs(got - want))))
        same = same and made_on.get(qid) == here
        done.append(qid)
    return Rescore(
        archive=str(archive),
        variant=variant,
        queries=tuple(done),
        presentations=presentations,
        scores=len(done) * presentations * len(requests[0].candidates),
        max_abs_diff=max(diffs),
        same_processor=same,
        tolerance=0.0 if same else tolerance,
    )


@dataclass(frozen=True)
class ArchiveCheck:
    """One re-score check (``students/checks.yaml``): a shipped student, the archived PSI run
    it made, and the data block giving those queries' candidates (a committed fixture, so a
    fresh clone without ``../shared/data`` can run it)."""

    student: str
    archive: str
    data: DataConfig
    queries: int = 2
    presentations: int = 2
    variant: str = "random_shuffle"


@dataclass(frozen=True)
class ArchiveChecks:
    checks: list[ArchiveCheck] = field(default_factory=list)


def load_checks(path: str | Path) -> list[ArchiveCheck]:
    """The checks of ``path`` (an empty list when the file has none yet)."""
    return load_config(
        path, lambda raw, _: build_dataclass(ArchiveChecks, raw), family="checks"
    ).checks


def archive_dtype(archive: str | Path) -> str:
    """The dtype the reranker of ``archive``'s PSI phase resolved to (its ``provenance.json``)."""
    found = {
        str(inv["reranker"]["dtype"])
        for inv in read_provenance(archive).invocations
        if inv.get("phase") == "psi"
        and isinstance(inv.get("reranker"), dict)
        and "dtype" in inv["reranker"]
    }
    if len(found) != 1:
        raise PresdepError(
            f"{archive}/provenance.json: expected one dtype of the psi phase's reranker, found "
            f"{sorted(found) or 'none'}; re-archive the run folder with `presdep study archive`"
        )
    return found.pop()


def run_check(check: ArchiveCheck, root: str | Path = ".") -> Rescore:
    """Re-score ``check``'s archive with its shipped student, in the archive's dtype."""
    requests = load_dataset(check.data).requests
    archive = Path(root) / check.archive
    return rescore(
        shipped_student(check.student, dtype=archive_dtype(archive)),
        archive,
        requests,
        queries=check.queries,
        presentations=check.presentations,
        variant=check.variant,
    )
