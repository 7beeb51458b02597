"""``presdep psi --from-scores``: are the stored scores still those of the data the config gives?

``psi/grade_distributions.npz`` keeps, beside the scores, what they were computed for: each
query's candidate ids (in input order), each candidate's grade and the query's judged grades
(the nDCG ideal). Before metrics are recomputed from it, :func:`check_stored_inputs` compares
them with what the config's data and judgements give *now*, so a fixed qrels file or a
re-exported first stage is never silently ignored (issue 38, defect 3):

* the data is on this machine (every path of the ``data`` block resolves): it is loaded and
  compared; any difference (a query added or gone, other candidate ids, another grade of a
  candidate, another judged grade of the query) is refused, naming the queries. Scores cannot
  be re-graded in place: the presentations may depend on the judgements (relevant-first
  placements), and changed passages need new scores. The fix is ``presdep psi`` without
  ``--from-scores`` and with ``--recompute-changed``, which re-scores the changed queries only.
* it is not (an archived folder on another machine, ``presdep psi --run-dir ARCHIVE
  --from-scores`` with the folder's own ``resolved_config.yaml``): the metrics are recomputed
  from the stored grades, and the log says they were not checked, naming the missing paths.

Either way one log line says which was done (docs/RUN-ARTIFACTS.md).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from presentation_dependence.config import ExperimentConfig
from presentation_dependence.data import Dataset, load_dataset
from presentation_dependence.data.config import resolve_path
from presentation_dependence.errors import ConfigError, PresdepError
from presentation_dependence.robustness.store import (
    candidate_grades,
    columnar_docids,
    ideal_grades,
    load_columnar,
)
from presentation_dependence.runners.fingerprint import PATH_FIELDS

__all__ = ["absent_data_paths", "check_stored_inputs", "stored_input_problems"]

log = logging.getLogger(__name__)


def absent_data_paths(cfg: ExperimentConfig) -> list[str]:
    """The set path fields of ``cfg.data`` none of whose alternatives exists here."""
    absent = []
    for key in PATH_FIELDS:
        try:
            resolve_path(getattr(cfg.data, key), key, required=False)
        except ConfigError:
            absent.append(key)
    return absent


def stored_input_problems(columnar: Path, dataset: Dataset) -> dict[str, str]:
    """``{qid: what differs}`` between the scores in ``columnar`` and ``dataset`` (empty: the
    same queries, candidate ids, grades and judged grades)."""
    table, docids = load_columnar(columnar), columnar_docids(columnar)
    problems: dict[str, str] = {}
    for req in dataset.requests:
        qid = req.query.qid
        if qid not in table:
            problems[qid] = "the data has it, the scores do not"
        elif docids[qid] != tuple(c.docid for c in req.candidates):
            problems[qid] = "the candidate ids differ"
        elif not np.array_equal(table[qid]["__grades__"], candidate_grades(req, dataset.qrels)):
            problems[qid] = "the judgements of its candidates differ"
        elif not np.array_equal(table[qid]["__ideal__"], ideal_grades(qid, dataset.qrels)):
            problems[qid] = "its judgements differ (the nDCG ideal)"
    in_data = {r.query.qid for r in dataset.requests}
    for qid in table:
        if qid not in in_data:
            problems[qid] = "scored, but no longer in the data"
    return problems


def _refusal(columnar: Path, cfg_id: str, problems: Mapping[str, str]) -> PresdepError:
    shown = "; ".join(f"{q!r}: {why}" for q, why in list(problems.items())[:5])
    more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
    return PresdepError(
        f"{columnar} holds scores of other data or judgements than the config of {cfg_id} "
        f"gives now, for {len(problems)} queries: {shown}{more}. --from-scores recomputes "
        "without a model, so it cannot follow the change. Fix: rerun 'presdep psi CONFIG "
        "--run-dir DIR --recompute-changed' (without --from-scores: it re-scores the changed "
        "queries and reuses the rest), or restore the data and judgements the scores were "
        "computed from"
    )


def check_stored_inputs(cfg: ExperimentConfig, columnar: Path) -> bool:
    """Check ``columnar`` against the data and judgements of ``cfg`` when the data is on this
    machine (True: checked and unchanged; refused when changed); False, logged, when it is
    not (the stored grades are used unchecked)."""
    absent = absent_data_paths(cfg)
    if absent:
        paths = ", ".join(f"data.{k}" for k in absent)
        log.warning(
            "--from-scores: the data of %s is not on this machine (%s resolve to no file): "
            "recomputing from the candidates and judgements stored with the scores, unchecked",
            cfg.id,
            paths,
        )
        return False
    problems = stored_input_problems(columnar, load_dataset(cfg.data))
    if problems:
        raise _refusal(columnar, cfg.id, problems)
    log.info(
        "--from-scores: the stored candidates and judgements match the data and judgements "
        "of %s: recomputing from the stored scores",
        cfg.id,
    )
    return True
