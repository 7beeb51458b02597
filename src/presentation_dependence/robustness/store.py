"""Stored scores and grade distributions of every presentation (the ``psi/`` folder).

``psi/per_query/<qid>.npz``   one file per query, written atomically: the resume unit.
``psi/grade_distributions.npz``  every (query, variant, presentation, candidate) as one row, in
    columns: qid, variant, presentation, docid, input_index, slot, chunk, grade, score and
    probs (the P(g) read at the candidate's slot; NaN for scorers without one). Every metric of
    ``psi/psi_metrics.json`` is recomputed from this file with no model call (``--from-scores``).

A *variant* is a perturbation name, or ``same_order`` for the null.
"""

from __future__ import annotations

import io
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from presentation_dependence.io.atomic import atomic_write_bytes
from presentation_dependence.presentations import NULL, PresentationScores
from presentation_dependence.records import Qrels, RerankRequest
from presentation_dependence.runners.stage import StoredInput

__all__ = [
    "NULL",
    "QueryScores",
    "candidate_grades",
    "columnar_docids",
    "ideal_grades",
    "load_columnar",
    "read_input",
    "read_query",
    "stored_readout",
    "write_columnar",
    "write_query",
]


def stored_readout(v: PresentationScores) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(slots, chunks, P(g))`` as stored: a scorer without a readout is recorded at its list
    position (slot = position + 1, one chunk) with NaN P(g)."""
    m, n = v.perms.shape
    return (
        v.slots if v.slots is not None else v.positions + 1,
        v.chunks if v.chunks is not None else np.zeros((m, n), dtype=np.int64),
        v.grade_probs if v.grade_probs is not None else np.full((m, n, 1), np.nan),
    )


@dataclass(frozen=True)
class QueryScores:
    qid: str
    docids: tuple[str, ...]
    grades: np.ndarray  # (n,) qrels grade per input candidate (0 when unjudged)
    ideal_grades: np.ndarray  # every judged grade of the query (the nDCG ideal)
    variants: Mapping[str, PresentationScores]


def candidate_grades(req: RerankRequest, qrels: Qrels | None) -> np.ndarray:
    """(n,) qrels grade of every input candidate (0 when unjudged or without qrels)."""
    return np.array(
        [qrels.grade(req.query.qid, c.docid) if qrels else 0 for c in req.candidates],
        dtype=np.int64,
    )


def ideal_grades(qid: str, qrels: Qrels | None) -> np.ndarray:
    """Every judged grade of ``qid``, descending: the nDCG ideal (empty without qrels)."""
    judged = qrels.judgements.get(qid, {}) if qrels else {}
    return np.array(sorted(judged.values(), reverse=True), dtype=np.int64)


_FIELDS = ("perms", "scores", "slots", "chunks", "probs", "forward_passes", "prompt_tokens")
_ATTR = {"probs": "grade_probs"}  # the file's name -> PresentationScores' field


def write_query(path: Path, qs: QueryScores, fingerprints: Mapping[str, str]) -> None:
    """One query's scores; ``fingerprints`` (``request_sha256``, ``config_sha256``: see
    :mod:`~presentation_dependence.runners.stage`) are checked before the file is reused."""
    arrays: dict[str, np.ndarray] = {
        "qid": np.array(qs.qid),
        "docids": np.array(qs.docids),
        "grades": qs.grades,
        "ideal_grades": qs.ideal_grades,
        "variants": np.array(list(qs.variants)),
    }
    for name, v in qs.variants.items():
        filled = dict(zip(("slots", "chunks", "probs"), stored_readout(v), strict=True))
        for f in _FIELDS:
            arrays[f"{name}:{f}"] = filled[f] if f in filled else getattr(v, f)
    for key, value in fingerprints.items():
        arrays[key] = np.array(value)
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)  # type: ignore[arg-type]
    atomic_write_bytes(path, buf.getvalue())


def read_query(path: Path) -> QueryScores:
    with np.load(path, allow_pickle=False) as z:
        variants = {
            str(name): PresentationScores(**{_ATTR.get(f, f): z[f"{name}:{f}"] for f in _FIELDS})
            for name in z["variants"]
        }
        return QueryScores(
            qid=str(z["qid"]),
            docids=tuple(str(d) for d in z["docids"]),
            grades=z["grades"],
            ideal_grades=z["ideal_grades"],
            variants=variants,
        )


def read_input(path: Path) -> StoredInput:
    """What a rerun compares before reusing ``path``: the ids, fingerprints (None in files
    written before they existed) and, as ``extra``, the grades and each variant's perms."""
    with np.load(path, allow_pickle=False) as z:
        extra = {"grades": z["grades"]}
        for name in z["variants"]:
            extra[f"{name}:perms"] = z[f"{name}:perms"]
        return StoredInput(
            docids=[str(d) for d in z["docids"]],
            request_sha256=str(z["request_sha256"]) if "request_sha256" in z.files else None,
            config_sha256=str(z["config_sha256"]) if "config_sha256" in z.files else None,
            extra=extra,
        )


def write_columnar(path: Path, queries: Sequence[QueryScores]) -> None:
    """All queries in long, columnar form (one row per query/variant/presentation/candidate)."""
    cols: defaultdict[str, list[np.ndarray]] = defaultdict(list)  # columns in append order
    for qs in queries:
        n = len(qs.docids)
        for name, v in qs.variants.items():
            m = v.scores.shape[0]
            slots, chunks, probs = stored_readout(v)
            cols["qid"].append(np.full(m * n, qs.qid))
            cols["variant"].append(np.full(m * n, name))
            cols["presentation"].append(np.repeat(np.arange(m), n))
            cols["docid"].append(np.tile(np.array(qs.docids), m))
            cols["input_index"].append(np.tile(np.arange(n), m))
            cols["slot"].append(slots.reshape(-1))
            cols["chunk"].append(chunks.reshape(-1))
            cols["grade"].append(np.tile(qs.grades, m))
            cols["score"].append(v.scores.reshape(-1))
            cols["probs"].append(probs.reshape(m * n, -1))
    arrays = {k: np.concatenate(v) for k, v in cols.items()}
    arrays["ideal_qid"] = np.concatenate([np.full(q.ideal_grades.size, q.qid) for q in queries])
    arrays["ideal_grade"] = np.concatenate([q.ideal_grades for q in queries])
    arrays["probs"] = arrays["probs"].astype(np.float32)
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)  # type: ignore[arg-type]
    atomic_write_bytes(path, buf.getvalue())


def load_columnar(path: Path) -> dict[str, dict[str, np.ndarray]]:
    """``{qid: {variant: (M, n) score matrix, "__grades__": (n,), "__ideal__": judged grades,
    "__slots__:<variant>": (M, n)}}`` from the columnar file alone, in row order."""
    with np.load(path, allow_pickle=False) as z:
        cols = {k: z[k] for k in z.files}
    out: dict[str, dict[str, np.ndarray]] = {}
    qids = cols["qid"]
    variants = cols["variant"]
    for q in dict.fromkeys(qids.tolist()):
        qmask = qids == q
        entry: dict[str, np.ndarray] = {}
        for var in dict.fromkeys(variants[qmask].tolist()):
            mask = qmask & (variants == var)
            m = int(cols["presentation"][mask].max()) + 1
            n = int(mask.sum()) // m
            entry[var] = cols["score"][mask].reshape(m, n)
            entry.setdefault("__grades__", cols["grade"][mask][:n])
            entry[f"__slots__:{var}"] = cols["slot"][mask].reshape(m, n)
        entry["__ideal__"] = cols["ideal_grade"][cols["ideal_qid"] == q]
        out[q] = entry
    return out


def columnar_docids(path: Path) -> dict[str, tuple[str, ...]]:
    """Each query's candidates in input order, from the columnar file (its first variant's
    first presentation)."""
    with np.load(path, allow_pickle=False) as z:
        qids, docids, pres, idx = z["qid"], z["docid"], z["presentation"], z["input_index"]
    out: dict[str, tuple[str, ...]] = {}
    first = pres == 0
    for q in dict.fromkeys(qids.tolist()):
        rows = first & (qids == q)
        n = int(idx[rows].max()) + 1
        out[q] = tuple(str(d) for d in docids[rows][:n])
    return out
