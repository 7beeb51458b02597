"""Two PSI archives of one config, score by score: ``presdep psi-diff A B``.

The same queries, candidates and presentations scored twice (on two machines, devices or
dtypes: a CPU archive and a GPU pass of the same jobs) differ only in arithmetic. For every
query both hold, every variant both hold and every presentation, the scores are compared by
input candidate (``psi/grade_distributions.npz``); the archives must agree on the candidates
and on the presentations (``psi/presentations.json``), or the comparison is refused.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from presentation_dependence.errors import PresdepError
from presentation_dependence.robustness.store import columnar_docids, load_columnar

__all__ = ["ArchiveDiff", "archive_diff"]


@dataclass(frozen=True)
class ArchiveDiff:
    """Scores compared between two archives: how many, over which queries, and by how much."""

    a: str
    b: str
    queries: int
    scores: int
    max_abs_diff: float
    mean_abs_diff: float

    def line(self) -> str:
        return (
            f"{self.a} vs {self.b}: {self.scores} scores of {self.queries} queries, "
            f"max |Δ| {self.max_abs_diff:.3g}, mean |Δ| {self.mean_abs_diff:.3g}"
        )


def _columnar(archive: Path) -> Path:
    path = archive / "psi" / "grade_distributions.npz"
    if not path.is_file():
        raise PresdepError(f"{archive} holds no psi/grade_distributions.npz (run 'presdep psi')")
    return path


def _perms(archive: Path) -> dict[str, dict[str, list[list[int]]]]:
    path = archive / "psi" / "presentations.json"
    if not path.is_file():
        raise PresdepError(f"{archive} holds no psi/presentations.json")
    table: dict[str, dict[str, list[list[int]]]] = json.loads(path.read_text("utf-8"))
    return table["presentations"]  # type: ignore[return-value]


def archive_diff(a: str | Path, b: str | Path) -> ArchiveDiff:
    """Compare every score the two archives share (see the module doc)."""
    a, b = Path(a), Path(b)
    sa, sb = load_columnar(_columnar(a)), load_columnar(_columnar(b))
    da, db = columnar_docids(_columnar(a)), columnar_docids(_columnar(b))
    pa, pb = _perms(a), _perms(b)
    diffs: list[np.ndarray] = []
    queries = [q for q in sa if q in sb]
    for q in queries:
        if da[q] != db[q]:
            raise PresdepError(f"query {q!r}: the candidates of {a} and {b} differ")
        for var in (v for v in sa[q] if not v.startswith("__") and v in sb[q]):
            if pa[q][var] != pb[q][var]:
                raise PresdepError(f"query {q!r}, {var}: {a} and {b} scored other presentations")
            diffs.append(np.abs(sa[q][var] - sb[q][var]).ravel())
    if not diffs:
        raise PresdepError(f"{a} and {b} share no query and variant to compare")
    d = np.concatenate(diffs)
    return ArchiveDiff(str(a), str(b), len(queries), d.size, float(d.max()), float(d.mean()))
