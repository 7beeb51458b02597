"""Order instability of any system from its TREC runs (``presdep psi-runs``).

A system outside this package (RankZephyr, FirstMistral, an API model) is run once per recorded
presentation: run ``m`` of variant ``v`` holds, for every query, the system's scores of the
candidates it was shown in presentation ``m`` (``psi/presentations.json``: slot ``j`` shows input
candidate ``perm[j]``). :func:`psi_from_runs` turns the runs into the same ``psi/`` folder as
:class:`~presentation_dependence.robustness.runner.PSIRunner`: the columnar
``grade_distributions.npz`` (no grade distributions: ``probs`` is NaN) and ``psi_metrics.json``
from the same :func:`~presentation_dependence.robustness.analysis.analyse`, so the figures mean
the same and the report reads the folder. The slot of a candidate is its 1-based position in the
presented list (a system's own windows or chunks are unknown), and ``cost`` is empty.

:func:`write_presentation_requests` writes the presented lists as rank_llm request files, one per
presentation, to run a system on; :func:`write_presentation_runs` writes a PSI folder's own scores
as such runs (exact float text), which is how the tests check that the two paths agree.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from presentation_dependence.config import ExperimentConfig
from presentation_dependence.config.robustness_config import RobustnessConfig
from presentation_dependence.data import load_dataset
from presentation_dependence.errors import InputFormatError, PresdepError
from presentation_dependence.io.atomic import atomic_write_text
from presentation_dependence.io.rankllm_json import write_rankllm_json
from presentation_dependence.io.trec import read_run
from presentation_dependence.presentations import PresentationScores
from presentation_dependence.provenance import collect_provenance
from presentation_dependence.records import Qrels, RerankRequest
from presentation_dependence.robustness.analysis import analyse
from presentation_dependence.robustness.runner import PSI_DIR
from presentation_dependence.robustness.store import (
    NULL,
    QueryScores,
    candidate_grades,
    ideal_grades,
    load_columnar,
    write_columnar,
)
from presentation_dependence.runners.run_folder import RunFolder

__all__ = [
    "Presentations",
    "psi_from_runs",
    "read_presentations",
    "run_psi_runs",
    "score_runs",
    "write_presentation_requests",
    "write_presentation_runs",
]

log = logging.getLogger(__name__)
FIX = (
    'write {"seed": S, "presentations": {qid: {variant: [[perm], ...]}}} as presdep psi does '
    "(slot j shows input candidate perm[j])"
)


@dataclass(frozen=True)
class Presentations:
    """Recorded presentations: ``table[qid][variant]`` is an (M, n) int array of permutations."""

    seed: int
    table: Mapping[str, Mapping[str, np.ndarray]]

    def variants(self) -> list[str]:
        return list(next(iter(self.table.values()))) if self.table else []


def read_presentations(path: str | Path) -> Presentations:
    """Read ``psi/presentations.json``; every entry must be M permutations of 0..n-1."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputFormatError(path, None, "a presentations JSON file", str(exc), FIX) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("presentations"), dict):
        raise InputFormatError(path, None, 'a "presentations" object', repr(doc)[:60], FIX)
    seed = doc.get("seed")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise InputFormatError(path, None, 'an integer "seed"', repr(seed), FIX)
    table: dict[str, dict[str, np.ndarray]] = {}
    for qid, variants in doc["presentations"].items():
        if not isinstance(variants, dict) or not variants:
            raise InputFormatError(path, None, f"variants for query {qid!r}", repr(variants), FIX)
        table[qid] = {}
        for var, perms in variants.items():
            arr = np.asarray(perms)
            n = arr.shape[1] if arr.ndim == 2 else -1
            if arr.ndim != 2 or not all(sorted(p) == list(range(n)) for p in arr.tolist()):
                raise InputFormatError(
                    path, None, f"permutations of 0..n-1 for {qid!r}/{var!r}", str(perms)[:60], FIX
                )
            table[qid][var] = arr.astype(np.int64)
    if not table:
        raise InputFormatError(path, None, "at least one query", "none", FIX)
    return Presentations(seed, table)


def _check_candidates(pres: Presentations, requests: Sequence[RerankRequest]) -> None:
    by_qid = {r.query.qid: r for r in requests}
    for qid, variants in pres.table.items():
        if qid not in by_qid:
            raise PresdepError(
                f"query {qid!r} has presentations but no candidates: pass the candidates the "
                "presentations were drawn for (the config or file given to 'presdep psi')"
            )
        n = len(by_qid[qid].candidates)
        for var, perms in variants.items():
            if perms.shape[1] != n:
                raise PresdepError(
                    f"query {qid!r}: the {var} presentations show {perms.shape[1]} candidates, "
                    f"the candidates given have {n} (same data.top_k as 'presdep psi'?)"
                )


def write_presentation_requests(
    pres: Presentations,
    requests: Sequence[RerankRequest],
    out_dir: str | Path,
    docs: Mapping[tuple[str, str], dict[str, Any]] | None = None,
) -> dict[str, list[Path]]:
    """``out_dir/<variant>/<m>.json``: rank_llm requests with the candidates as presented
    (``docs``: the candidates' own rank_llm ``doc`` objects, kept as they were)."""
    _check_candidates(pres, requests)
    by_qid = {r.query.qid: r for r in requests}
    written: dict[str, list[Path]] = {}
    for var in pres.variants():
        m_count = pres.table[next(iter(pres.table))][var].shape[0]
        for m in range(m_count):
            shown = [
                RerankRequest(
                    by_qid[qid].query,
                    tuple(by_qid[qid].candidates[int(i)] for i in variants[var][m]),
                )
                for qid, variants in pres.table.items()
            ]
            path = Path(out_dir) / var / f"{m}.json"
            written.setdefault(var, []).append(
                write_rankllm_json(shown, path, layout="candidates", docs=docs)
            )
    return written


def write_presentation_runs(psi_dir: str | Path, out_dir: str | Path) -> dict[str, list[Path]]:
    """``out_dir/<variant>/<m>.trec`` from a PSI folder's scores, written as exact float text."""
    with np.load(Path(psi_dir) / "grade_distributions.npz", allow_pickle=False) as z:
        cols = {k: z[k] for k in ("qid", "variant", "presentation", "docid", "score")}
    written: dict[str, list[Path]] = {}
    for var in dict.fromkeys(cols["variant"].tolist()):
        vmask = cols["variant"] == var
        for m in range(int(cols["presentation"][vmask].max()) + 1):
            mask = vmask & (cols["presentation"] == m)
            lines: list[str] = []
            for qid in dict.fromkeys(cols["qid"][mask].tolist()):
                q = mask & (cols["qid"] == qid)
                docids, scores = cols["docid"][q], cols["score"][q]
                for rank, i in enumerate(np.argsort(-scores, kind="stable"), start=1):
                    lines.append(f"{qid} Q0 {docids[i]} {rank} {float(scores[i])!r} {var}-{m}\n")
            path = Path(out_dir) / str(var) / f"{m}.trec"
            written.setdefault(str(var), []).append(atomic_write_text(path, "".join(lines)))
    return written


def score_runs(
    pres: Presentations,
    requests: Sequence[RerankRequest],
    qrels: Qrels | None,
    runs: Mapping[str, Sequence[str | Path]],
    *,
    from_ranks: bool = False,
) -> list[QueryScores]:
    """The stored form of every query from ``runs[variant][m]`` (the run of presentation m).

    ``from_ranks`` scores a candidate ``n − rank + 1`` (trec_eval's order) instead of the run's
    score: for systems whose scores are not comparable across lists.
    """
    _check_candidates(pres, requests)
    if NULL not in runs:
        raise PresdepError(
            f"no runs for the {NULL} null: give the runs of the given order too (--runs {NULL} "
            "RUN ...; for a deterministic system the same run twice)"
        )
    for var in runs:
        if var not in pres.variants():
            raise PresdepError(
                f"variant {var!r} has runs but no presentations; recorded: {pres.variants()}"
            )
    read = {var: [read_run(p) for p in paths] for var, paths in runs.items()}
    by_qid = {r.query.qid: r for r in requests}
    queries: list[QueryScores] = []
    for qid in pres.table:
        req = by_qid[qid]
        docids = [c.docid for c in req.candidates]
        variants: dict[str, PresentationScores] = {}
        for var in [v for v in pres.variants() if v in runs]:
            perms = pres.table[qid][var]
            if len(runs[var]) != perms.shape[0]:
                raise PresdepError(
                    f"variant {var!r}: {len(runs[var])} runs for {perms.shape[0]} presentations; "
                    "give one run per presentation, in presentation order"
                )
            scores = np.array(
                [
                    _row(run, str(path), qid, docids, from_ranks)
                    for run, path in zip(read[var], runs[var], strict=True)
                ]
            )
            no_cost = np.zeros(perms.shape[0], dtype=np.int64)  # slots: list positions (stored)
            variants[var] = PresentationScores(perms, scores, None, None, None, no_cost, no_cost)
        queries.append(
            QueryScores(
                qid, tuple(docids), candidate_grades(req, qrels), ideal_grades(qid, qrels), variants
            )
        )
    return queries


def _row(run: Any, path: str, qid: str, docids: Sequence[str], from_ranks: bool) -> np.ndarray:
    """(n,) scores of ``docids`` for ``qid`` in one run; every candidate must be scored."""
    rows = run.entries.get(qid)
    if rows is None:
        raise PresdepError(f"{path}: no lines for query {qid!r}; every run must rank every query")
    n = len(rows)
    got = {e.docid: float(n - e.rank + 1) if from_ranks else e.score for e in rows}
    missing = [d for d in docids if d not in got]
    extra = set(got) - set(docids)
    if missing or extra:
        raise PresdepError(
            f"{path}: query {qid!r} must score exactly its {len(docids)} candidates; "
            f"missing {missing[:5]}, unknown {sorted(extra)[:5]}"
        )
    return np.array([got[d] for d in docids], dtype=np.float64)


def psi_from_runs(
    queries: Sequence[QueryScores],
    rob: RobustnessConfig,
    seed: int,
    psi_dir: str | Path,
) -> dict[str, Any]:
    """Write ``grade_distributions.npz`` and return the metrics (the caller writes them)."""
    columnar = Path(psi_dir) / "grade_distributions.npz"
    write_columnar(columnar, queries)
    metrics = analyse(load_columnar(columnar), rob, seed=seed)
    metrics["cost"] = {}
    return metrics


def run_psi_runs(
    cfg: ExperimentConfig,
    presentations_path: str | Path,
    runs: Mapping[str, Sequence[str | Path]],
    out_dir: str | Path,
    *,
    from_ranks: bool = False,
    argv: Sequence[str] | None = None,
) -> dict[str, Any]:
    """``presdep psi-runs``: ``out_dir`` becomes a folder like ``presdep psi``'s.

    ``cfg`` gives the candidates and judgements (``data``) and the metric settings
    (``robustness``); the bootstrap seed is the presentations' own.
    """
    pres = read_presentations(presentations_path)
    folder = RunFolder(out_dir)
    with folder.logging_to_file():
        folder.freeze_config(cfg)
        dataset = load_dataset(cfg.data)
        queries = score_runs(pres, dataset.requests, dataset.qrels, runs, from_ranks=from_ranks)
        folder.write_text(
            f"{PSI_DIR}/presentations.json", Path(presentations_path).read_text(encoding="utf-8")
        )
        metrics = psi_from_runs(queries, cfg.robustness, pres.seed, folder.path / PSI_DIR)
        folder.write_json(f"{PSI_DIR}/psi_metrics.json", metrics)
        folder.append_provenance(
            collect_provenance(
                argv=argv,
                seeds={"presentation_seed": pres.seed},
                extra={
                    "phase": "psi-runs",
                    "presentations": str(presentations_path),
                    "runs": {v: [str(p) for p in ps] for v, ps in runs.items()},
                    "scores": "ranks" if from_ranks else "run scores",
                },
            )
        )
        log.info("wrote %s", folder.path / PSI_DIR / "psi_metrics.json")
    return metrics
