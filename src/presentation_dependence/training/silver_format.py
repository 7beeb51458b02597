"""The silver file's records and its reader (format ``presdep-silver/1``, see :mod:`.silver`).

:class:`SilverQuery` is one training query with its raw teacher scores under T presentations
(one row for an order-free teacher) and the file's calibration map; :func:`read_silver` reads
one or more files strictly (errors name the file and line) and attaches each file's map to its
queries. :mod:`presentation_dependence.training.silver` writes the files and re-exports these.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from presentation_dependence.errors import ConfigError, InputFormatError
from presentation_dependence.records import Candidate
from presentation_dependence.training.calibration import IDENTITY, Calibration

__all__ = ["SILVER_FORMAT", "SilverQuery", "SilverSet", "read_silver", "read_silver_file"]

SILVER_FORMAT = "presdep-silver/1"


@dataclass(frozen=True)
class SilverQuery:
    """One training query with its teacher scores under T presentations."""

    source: str
    qid: str
    query: str
    candidates: tuple[Candidate, ...]
    presentations: np.ndarray  # (T, n) int: slot j of order t shows candidate [t, j]
    order_scores: np.ndarray  # (T, n) float: candidate-aligned teacher scores
    teacher_id: str
    teacher_revision: str | None = None
    order_grade_probs: np.ndarray | None = None  # (T, n, G)
    order_free: bool = False  # one stored row, exact for every T (an order-free teacher)
    calibration: Calibration = IDENTITY  # the file's map (header); not written per line

    @property
    def key(self) -> str:
        return f"{self.source}/{self.qid}"

    @property
    def num_orders(self) -> int:
        return int(self.order_scores.shape[0])

    def _rows(self, teacher_orders: int) -> np.ndarray:
        stored = 1 if self.order_free else self.num_orders
        if teacher_orders < 1 or (not self.order_free and teacher_orders > stored):
            raise ConfigError(
                f"silver query {self.key}: {teacher_orders} teacher orders asked, {stored} stored"
            )
        return self.order_scores[: 1 if self.order_free else teacher_orders]

    def labels(self, teacher_orders: int) -> np.ndarray:
        """The training labels: the calibrated teacher scores, mean over the first
        ``teacher_orders`` orders, per candidate (an order-free teacher's one row for any T)."""
        return np.asarray(
            self.calibration(self._rows(teacher_orders)).mean(axis=0), dtype=np.float64
        )

    def raw_labels(self, teacher_orders: int) -> np.ndarray:
        """:meth:`labels` without the calibration map: the raw teacher scores' mean."""
        return np.asarray(self._rows(teacher_orders).mean(axis=0), dtype=np.float64)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "source": self.source,
            "qid": self.qid,
            "query": self.query,
            "candidates": [
                {"docid": c.docid, "text": c.text, "rank": c.rank} for c in self.candidates
            ],
            "presentations": self.presentations.tolist(),
            "order_scores": self.order_scores.tolist(),
            "scores": self.order_scores.mean(axis=0).tolist(),
            "teacher_id": self.teacher_id,
            "teacher_revision": self.teacher_revision,
        }
        if self.order_grade_probs is not None:
            d["order_grade_probs"] = self.order_grade_probs.tolist()
        if self.order_free:
            d["order_free"] = True
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SilverQuery:
        cands = tuple(
            Candidate(str(c["docid"]), str(c["text"]), int(c["rank"])) for c in d["candidates"]
        )
        pres = np.asarray(d["presentations"], dtype=np.int64)
        scores = np.asarray(d["order_scores"], dtype=np.float64)
        n = len(cands)
        if pres.ndim != 2 or pres.shape[1] != n or scores.shape != pres.shape:
            raise ValueError(
                f"presentations {pres.shape} / order_scores {scores.shape} do not match "
                f"{n} candidates"
            )
        order_free = d.get("order_free", False)
        if not isinstance(order_free, bool) or (order_free and pres.shape[0] != 1):
            raise ValueError(
                f"order_free must be true or false, with one stored order: {order_free!r}"
            )
        probs = d.get("order_grade_probs")
        grade_probs = None if probs is None else np.asarray(probs, dtype=np.float64)
        _require_finite("order_scores", scores)
        if grade_probs is not None:
            _require_finite("order_grade_probs", grade_probs)
        return cls(
            source=str(d["source"]),
            qid=str(d["qid"]),
            query=str(d["query"]),
            candidates=cands,
            presentations=pres,
            order_scores=scores,
            teacher_id=str(d["teacher_id"]),
            teacher_revision=d.get("teacher_revision"),
            order_grade_probs=grade_probs,
            order_free=order_free,
        )


def _require_finite(name: str, values: np.ndarray) -> None:
    """``ValueError`` naming the first non-finite entry (NaN, Infinity) of ``values``: a label
    that would train every weight of the student to NaN."""
    bad = np.argwhere(~np.isfinite(values))
    if len(bad):
        at = "".join(f"[{int(i)}]" for i in bad[0])
        raise ValueError(
            f"{name}{at} is {float(values[tuple(bad[0])])!r} ({len(bad)} non-finite value(s)): "
            "every label must be a finite number"
        )


@dataclass(frozen=True)
class SilverSet:
    """The queries of one or more silver files, with each file's header."""

    headers: tuple[dict[str, Any], ...]
    queries: tuple[SilverQuery, ...]

    @property
    def num_orders(self) -> int:
        return min(q.num_orders for q in self.queries)


def read_silver_file(path: Path) -> tuple[dict[str, Any], list[SilverQuery]]:
    """The header and the queries of one silver file; every label must be finite (a NaN or
    Infinity is refused with its line)."""
    fix = (
        "remake it with 'presdep silver CONFIG --force' (scripts/train/make_silver.py; "
        "format in docs/TRAINING-RUNS.md)"
    )
    if not path.is_file():
        raise ConfigError(f"silver file not found: {path}. Fix: {fix}")
    lines = path.read_text(encoding="utf-8").splitlines()
    if not lines:
        raise InputFormatError(path, 1, "a header line", "an empty file", fix)
    try:
        header = json.loads(lines[0])
    except ValueError as e:
        raise InputFormatError(path, 1, "a JSON header", str(e), fix) from None
    if not isinstance(header, dict) or header.get("format") != SILVER_FORMAT:
        got = header.get("format") if isinstance(header, dict) else type(header).__name__
        raise InputFormatError(path, 1, f"format {SILVER_FORMAT!r}", repr(got), fix)
    try:
        raw_cal = header.get("calibration")
        cal = IDENTITY if raw_cal is None else Calibration.from_dict(raw_cal)
        _require_finite("calibration knots", np.asarray([*cal.knots_x, *cal.knots_y]))
    except (ValueError, AttributeError) as e:
        raise InputFormatError(path, 1, "a calibration map (or none)", str(e), fix) from None
    queries = []
    for no, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        try:
            q = SilverQuery.from_dict(json.loads(line))
        except (ValueError, KeyError, TypeError) as e:
            raise InputFormatError(
                path, no, "a silver query record", f"{type(e).__name__}: {e}", fix
            ) from None
        queries.append(replace(q, calibration=cal))
    return header, queries


def read_silver(paths: str | Path | Iterable[str | Path]) -> SilverSet:
    """Read one silver file or several (their queries concatenated; keys must be unique)."""
    items = [paths] if isinstance(paths, (str, Path)) else list(paths)
    headers, queries, seen = [], [], set()
    for p in items:
        header, qs = read_silver_file(Path(p))
        headers.append(header)
        for q in qs:
            if q.key in seen:
                raise ConfigError(f"silver query {q.key} appears in more than one record ({p})")
            seen.add(q.key)
            queries.append(q)
    if not queries:
        raise ConfigError(f"no silver queries in {', '.join(map(str, items))}")
    return SilverSet(tuple(headers), tuple(queries))
