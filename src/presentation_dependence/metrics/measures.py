"""Measure names in the ``ir_measures`` convention, computed with trec_eval's definitions.

Names
-----
Any name ``ir_measures`` parses (``nDCG@10``, ``RR@10``, ``AP``, ``Judged@10``, ``P(rel=2)@10``,
``R@100``), with the measure name matched case-insensitively (``ndcg@10``, ``mrr@10``, ``map``,
``recall@100``, ``judged@10``), and trec_eval's names (``ndcg_cut_10``, ``recip_rank``, ``map``,
``P_5``, ``recall_100``). An unknown name is a :class:`~presentation_dependence.errors.ConfigError`
that suggests the closest names; so is a cutoff below 1 (``nDCG@0``, ``P_0``), which pytrec_eval
would abort the process on.

Computation
-----------
``ir_measures`` with three providers, tried in this order: pytrec_eval (every trec_eval measure),
ir_measures' judgement rate (``Judged@k``: the share of the top k that has a judgement of any
grade, 1 − the hole rate; over ``min(k, retrieved)`` as in ir_measures) and the MS MARCO script
(``RR@k``: trec_eval's ``recip_rank`` has no cutoff).

* **Order.** Every provider is handed each query in trec_eval's order (score descending, ties by
  docid *descending*) as strictly decreasing scores; the two Python providers would otherwise
  break ties by docid ascending and disagree with pytrec_eval on tied runs.
* **Queries.** Those of the run that have judgements, as trec_eval counts them. A query that a
  provider leaves out (MS MARCO's RR skips queries without a relevant document) scores 0, as
  trec_eval's ``recip_rank`` does.
* **relevance_level** is applied as ``rel=`` to every measure that takes one and does not name its
  own (``AP`` at level 2 is ``AP(rel=2)``); nDCG always uses the graded labels.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from functools import cache
from typing import Any, Protocol

import numpy as np

from presentation_dependence.errors import ConfigError, PresdepError
from presentation_dependence.records import Qrels, Run
from presentation_dependence.registry import did_you_mean

__all__ = [
    "EXAMPLE_NAMES",
    "evaluate_measures",
    "evaluate_run",
    "parse_measure",
    "supported_measure_names",
    "trec_eval_name",
]

#: Names shown in errors and help: the ir_measures convention first, then trec_eval's.
EXAMPLE_NAMES = [
    "nDCG@10",
    "RR@10",
    "AP",
    "Judged@10",
    "P@10",
    "R@100",
    "Success@10",
    "Rprec",
    "Bpref",
    "ndcg_cut_10",
    "recip_rank",
    "map",
    "P_10",
    "recall_100",
]
log = logging.getLogger(__name__)
_IRM_NAME = re.compile(r"(?P<base>[^\W\d]\w*?)(?P<params>\(.*\))?(?:@(?P<k>\d+))?", re.UNICODE)


def _providers() -> list[Any]:
    import ir_measures

    return [ir_measures.pytrec_eval, ir_measures.judged, ir_measures.msmarco]


@cache
def _registry() -> dict[str, Any]:
    """``{lowercased name: measure}`` of every measure the providers compute (aliases too)."""
    import ir_measures

    supported = {m.NAME for p in _providers() for m in p.SUPPORTED_MEASURES}
    by_lower: dict[str, Any] = {}
    for name, measure in ir_measures.measures.registry.items():
        if measure.NAME in supported:
            by_lower[name.lower()] = measure
    return by_lower


def supported_measure_names() -> list[str]:
    """The measure names (without parameters) this package computes, aliases included."""
    import ir_measures

    wanted = set(_registry().values())
    return sorted(n for n, m in ir_measures.measures.registry.items() if m in wanted)


def _supported(measure: Any) -> bool:
    for provider in _providers():
        try:
            if provider.supports(measure):
                return True
        except (AssertionError, KeyError):  # ir_measures' parameter validation
            return False
    return False


def _unknown(name: str, where: str, base: str | None = None, suffix: str = "") -> ConfigError:
    if base is not None:
        hint = did_you_mean(base, supported_measure_names())
        hint = re.sub(r"'([^']+)'", lambda m: repr(m.group(1) + suffix), hint)
    else:
        hint = ""
    hint = hint or did_you_mean(name, EXAMPLE_NAMES)
    return ConfigError(
        f"{where}: unknown measure {name!r}.{hint} Use an ir_measures name (e.g. "
        f"{', '.join(EXAMPLE_NAMES[:6])}) or a trec_eval name (e.g. {', '.join(EXAMPLE_NAMES[9:])})",
        key=where,
    )


def _parse_irm(name: str, where: str) -> Any | None:
    """``name`` in the ir_measures convention, or None when its measure name is not one."""
    import ir_measures

    m = _IRM_NAME.fullmatch(name)
    if m is None:
        return None
    measure = _registry().get(m.group("base").lower())
    if measure is None:
        return None
    canonical = measure.NAME + (m.group("params") or "") + (f"@{m.group('k')}" if m["k"] else "")
    try:
        parsed = ir_measures.parse_measure(canonical)
    except Exception as exc:  # ir_measures raises ValueError/NameError/SyntaxError
        raise ConfigError(f"{where}: cannot read measure {name!r}: {exc}", key=where) from None
    for param, info in parsed.SUPPORTED_PARAMS.items():
        if info.required and param not in parsed.params:
            example = f"{parsed.NAME}@10" if param == "cutoff" else f"{parsed.NAME}({param}=...)"
            raise ConfigError(
                f"{where}: measure {name!r} needs a {param}: write e.g. {example}", key=where
            )
    try:
        parsed.validate_params()
    except AssertionError as exc:
        known = ", ".join(parsed.SUPPORTED_PARAMS)
        raise ConfigError(
            f"{where}: measure {name!r}: {exc}. {parsed.NAME} takes the parameters {known}",
            key=where,
        ) from None
    return parsed


def _parse_trec(name: str) -> Any | None:
    """``name`` as a trec_eval measure (``ndcg_cut_10``), or None."""
    import ir_measures

    try:
        found = ir_measures.parse_trec_measure(name)
    except (ValueError, KeyError):
        return None
    if len(found) != 1:
        return None
    m = found[0]
    if m.NAME == "NumRet":  # num_rel_ret is NumRet(rel=...), num_ret NumRet
        return m
    # trec_eval's names carry no relevance level (it is trec_eval's -l): drop the rel=1 that
    # ir_measures fills in, so relevance_level applies as to every other measure.
    params = {k: v for k, v in m.params.items() if k != "rel"}
    return ir_measures.measures.registry[m.NAME](**params)


def _check_cutoff(measure: Any, name: str, where: str) -> None:
    """A cutoff is the depth of the ranking a measure reads: at least 1. (pytrec_eval aborts
    the whole process on ``ndcg_cut_0``, so it is refused here, where names are parsed.)"""
    k = measure.params.get("cutoff")
    if k is not None and k < 1:
        raise ConfigError(
            f"{where}: measure {name!r} has the cutoff {k}; a cutoff counts the top k of the "
            f"ranking and must be >= 1. Fix: write e.g. {measure.NAME}@10",
            key=where,
        )


def parse_measure(name: str, relevance_level: int = 1, *, where: str = "eval.measures") -> Any:
    """The ``ir_measures`` measure a name stands for, with ``relevance_level`` applied.

    >>> str(parse_measure("mrr@10", relevance_level=2))
    'RR(rel=2)@10'
    >>> str(parse_measure("ndcg_cut_10"))
    'nDCG@10'
    """
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(
            f"{where}: a measure name must be a non-empty string, got {name!r}", key=where
        )
    name = name.strip()
    measure = _parse_irm(name, where)
    if measure is None:
        measure = _parse_trec(name)
        if measure is not None and measure.NAME == "NumRet" and "rel" in measure.params:
            measure = measure(rel=relevance_level)
    if measure is None:
        m = _IRM_NAME.fullmatch(name)
        base = m.group("base") if m else None
        suffix = ((m.group("params") or "") + (f"@{m['k']}" if m["k"] else "")) if m else ""
        raise _unknown(name, where, base if m and ("@" in name or "(" in name) else None, suffix)
    _check_cutoff(measure, name, where)
    # NumRet's rel turns num_ret into num_rel_ret; pytrec_eval's num_rel takes no level.
    takes_level = "rel" in measure.SUPPORTED_PARAMS and measure.NAME not in ("NumRet", "NumRel")
    if takes_level and "rel" not in measure.params and relevance_level != 1:
        measure = measure(rel=relevance_level)
    if not _supported(measure):
        raise ConfigError(
            f"{where}: measure {name!r} ({measure}) is not computed here with these parameters: "
            "only pytrec_eval's measures, the judgement rate (Judged@k) and MS MARCO's RR@k are. "
            f"Supported measures: {', '.join(supported_measure_names())}",
            key=where,
        )
    return measure


def trec_eval_name(measure: Any) -> str | None:
    """trec_eval's name of an ``ir_measures`` measure, or None when trec_eval has none.

    Only measures at relevance level 1 (trec_eval's default ``-l``) or without a level map.
    """
    p = measure.params
    if p.get("rel", 1) != 1 or p.get("judged_only"):
        return None
    k = p.get("cutoff")
    name = measure.NAME
    if name == "nDCG" and set(p) <= {"cutoff"}:
        return f"ndcg_cut_{k}" if k is not None else "ndcg"
    if name == "AP":
        return f"map_cut_{k}" if k is not None else "map"
    if name == "RR" and k is None:
        return "recip_rank"
    with_cutoff = {"P": "P", "R": "recall", "Success": "success"}
    if name in with_cutoff and k is not None:
        return f"{with_cutoff[name]}_{k}"
    if name == "NumRet":
        return "num_rel_ret" if "rel" in p else "num_ret"
    plain = {"Rprec": "Rprec", "Bpref": "bpref", "NumRel": "num_rel"}
    if name in plain:
        return plain[name]
    return None


def _trec_order(run: Run) -> dict[str, dict[str, float]]:
    """``{qid: {docid: score}}`` with strictly decreasing scores in trec_eval's order."""
    out: dict[str, dict[str, float]] = {}
    for qid, rows in run.entries.items():
        ordered = sorted(rows, key=lambda e: (e.score, e.docid), reverse=True)
        out[qid] = {e.docid: float(len(ordered) - i) for i, e in enumerate(ordered)}
    return out


def evaluate_measures(
    run: Run, qrels: Qrels, measures: Mapping[str, Any]
) -> dict[str, dict[str, float]]:
    """``{qid: {name: value}}`` for every query of ``run`` that ``qrels`` judges, in run order.

    ``measures`` maps the caller's names to ``ir_measures`` measures (see :func:`parse_measure`).
    """
    import ir_measures

    judged = [q for q in run.qids() if qrels.judgements.get(q)]
    if not judged or not measures:
        return {q: {} for q in judged}
    by_measure: dict[Any, list[str]] = {}
    for name, m in measures.items():
        by_measure.setdefault(m, []).append(name)
    pipeline = ir_measures.providers.FallbackProvider(_providers())
    values: dict[tuple[str, Any], float] = {}
    run_dict = _trec_order(Run({q: run.entries[q] for q in judged}, run.name))
    for metric in pipeline.iter_calc(list(by_measure), qrels.to_dict(), run_dict):
        values[metric.query_id, metric.measure] = float(metric.value)
    return {q: {n: values.get((q, measures[n]), 0.0) for n in measures} for q in judged}


class MeasureSet(Protocol):
    """What :func:`evaluate_run` needs of an eval config (``config.EvalConfig`` is one)."""

    @property
    def relevance_level(self) -> int: ...

    def resolved_measures(self) -> dict[str, Any]: ...


def _nothing_judged(run: Run, qrels: Qrels, run_source: str, qrels_source: str) -> PresdepError:
    def some(qids: list[str]) -> str:
        return (
            f"{len(qids)} queries, e.g. {', '.join(repr(q) for q in qids[:3])}" if qids else "none"
        )

    return PresdepError(
        f"no query of {run_source} ({some(run.qids())}) has judgements in {qrels_source} "
        f"({some(list(qrels.judgements))}): there is nothing to evaluate, so nothing was "
        "written. Fix: give the judgements of this run's queries (the query ids must match)"
    )


def evaluate_run(
    run: Run,
    qrels: Qrels,
    eval_cfg: MeasureSet,
    *,
    run_source: str = "the run",
    qrels_source: str = "the judgements",
) -> dict[str, Any]:
    """Per-query values and the mean over judged queries, keyed by the configured names.

    ``measures`` maps each name to its ir_measures form (``mrr@10`` -> ``RR@10``); see the module
    docstring for the providers and the tie order. Judged queries the run does not have are not
    evaluated (as trec_eval) and are warned about. A run none of whose queries is judged has no
    mean: :class:`PresdepError` naming ``run_source`` and ``qrels_source`` (the files).
    """
    measures = eval_cfg.resolved_measures()
    per_query = evaluate_measures(run, qrels, measures)
    judged = list(per_query)
    if not judged:
        raise _nothing_judged(run, qrels, run_source, qrels_source)
    in_run = set(run.qids())
    not_in_run = [q for q in qrels.judgements if q not in in_run]
    if not_in_run:
        log.warning(
            "%d of %d judged queries are not in the run and are not evaluated (as trec_eval), "
            "e.g. %s",
            len(not_in_run),
            len(qrels.judgements),
            ", ".join(repr(q) for q in not_in_run[:3]),
        )
    mean = {n: float(np.mean([per_query[q][n] for q in judged])) for n in measures}
    return {
        "measures": {n: str(m) for n, m in measures.items()},
        "relevance_level": eval_cfg.relevance_level,
        "num_queries": len(judged),
        "mean": mean,
        "per_query": per_query,
        "unjudged_queries": [q for q in run.qids() if q not in per_query],
        "judged_queries_not_in_run": len(not_in_run),
    }
