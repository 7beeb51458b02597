"""One held-out point per checkpoint of a student, cached in its training folder.

A point is the student of a training config, serving one adapter (a snapshot
``<output_dir>/snapshots/step-<N>/``, the final ``adapter/``, or None for the base model; with
``finetune: full`` the snapshots and ``model/`` are whole models, served as ``model_name``), scored
on held-out queries of ``splits.heldout`` in their given order and under M seeded shuffles
(:func:`~.lambda_select.evaluate_heldout`): nDCG@10 in the given order and over the shuffles,
τ-PSI, the score spread, and per query nDCG@10 (given, over shuffles) and τ-PSI. Each point is
cached in ``<output_dir>/curve/step-<step>.json`` with the key it was made from (the adapter's
sha256, M, the seed, the queries), so the learning curve (``studies/curve.py``) and early
stopping (:mod:`.early_stop`) measure a checkpoint once between them, and an interrupted curve
resumes point by point.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from presentation_dependence.config.robustness_config import RobustnessConfig
from presentation_dependence.io.atomic import atomic_write_text
from presentation_dependence.metrics.ranking import ndcg_at_k
from presentation_dependence.presentations import draw_presentations, score_presentations
from presentation_dependence.readout.adapter import adapter_sha256, files_sha256
from presentation_dependence.rerankers import Reranker, build_reranker
from presentation_dependence.rerankers.base import RerankerConfig
from presentation_dependence.rerankers.grade import clear_model_cache
from presentation_dependence.robustness.analysis import query_metrics
from presentation_dependence.runners.progress import progress
from presentation_dependence.training.config import TrainingConfig
from presentation_dependence.training.resume import train_record
from presentation_dependence.training.splits import JudgedQuery, load_queries, stratified_head

__all__ = ["PER_QUERY", "cached", "checkpoint_adapters", "curve_point", "evaluate_heldout"]
__all__ += ["heldout_head", "is_model_folder", "point_path", "student_reranker", "weights_sha256"]

log = logging.getLogger(__name__)
PER_QUERY = ("ndcg_given", "ndcg_mean", "tau_psi")
MODEL_WEIGHTS = "model.safetensors"
_STEP = re.compile(r"^step-(\d+)$")


def evaluate_heldout(
    reranker: Reranker,
    heldout: Sequence[JudgedQuery],
    *,
    num_presentations: int,
    seed: int,
    ndcg_k: int = 10,
) -> dict[str, Any]:
    """Mean nDCG@k in the given order and over M shuffles, τ-PSI and friends, over queries."""
    rob = RobustnessConfig(num_presentations=num_presentations, ndcg_k=ndcg_k)
    per_query: dict[str, dict[str, float]] = {}
    for source, req, qrels in progress(heldout, "held-out evaluation", unit="query"):
        cands = list(req.candidates)
        n = len(cands)
        grades = np.array([qrels.get(c.docid, 0) for c in cands], dtype=np.float64)
        ideal = np.array(list(qrels.values()) or [0], dtype=np.float64)
        perms = draw_presentations("random_shuffle", n, num_presentations, seed, req.query.qid)
        matrix = score_presentations(reranker, req.query, cands, perms).scores
        given = score_presentations(reranker, req.query, cands, [range(n)]).scores[0]
        metrics = query_metrics(matrix, grades, ideal, rob)
        metrics["ndcg_given"] = ndcg_at_k(given, grades, k=ndcg_k, ideal_gains=ideal)
        per_query[f"{source}/{req.query.qid}"] = metrics
    keys = ("ndcg_given", "ndcg_mean", "tau_psi", "mean_tau", "delta_ndcg", "score_var")
    means = {k: float(np.mean([pq[k] for pq in per_query.values()])) for k in keys}
    return {**means, "num_queries": len(per_query), "per_query": per_query}


def student_reranker(cfg: TrainingConfig, adapter: Path | None) -> Reranker:
    """The reranker of ``cfg``'s student block, serving ``adapter`` (None: the base model);
    with the training's thread count where the block names none (two torch threads beside a
    job on the other core ran a held-out evaluation 5x slower than one)."""
    block = dict(cfg.student)
    if block.get("num_threads") is None and cfg.train.num_threads:
        block["num_threads"] = cfg.train.num_threads
    if adapter is not None and is_model_folder(adapter):  # finetune: full
        block.update(model_name=str(adapter), revision=None)
    elif adapter is not None:
        block["adapter_path"] = str(adapter)
    rc = RerankerConfig.from_raw(block)
    return build_reranker(rc.reranker_class, rc.options)


def cached(path: Path, key: dict[str, Any], name: str, make: Callable[[], Any]) -> Any:
    """``make()``, reused from ``path`` when it was made with the same ``key``; a new value is
    stored there as ``{"key": key, name: value}``."""
    if path.is_file():
        saved = json.loads(path.read_text(encoding="utf-8"))
        if saved.get("key") == key:
            return saved[name]
    value = make()
    atomic_write_text(path, json.dumps({"key": key, name: value}, indent=1) + "\n")
    return value


def checkpoint_adapters(
    output_dir: str | Path, every: int = 1, steps: Sequence[int] | None = None
) -> list[tuple[int, Path]]:
    """``(step, adapter folder)`` of every snapshot (``train.keep_snapshots``) whose step is a
    multiple of ``every`` (or, given ``steps``, one of them), ascending, then the final adapter
    when it is later."""
    if every < 1:
        raise ValueError(f"every must be >= 1, got {every}")
    wanted = None if steps is None else set(steps)
    out = Path(output_dir)
    found: list[tuple[int, Path]] = []
    snaps = out / "snapshots"
    if snaps.is_dir():
        for p in snaps.iterdir():
            m = _STEP.match(p.name)
            if not m or not _has_weights(p):
                continue
            step = int(m.group(1))
            if (step in wanted) if wanted is not None else step % every == 0:
                found.append((step, p))
    found.sort()
    final = out / ("model" if (out / "model").is_dir() else "adapter")
    prov = train_record(out)
    if _has_weights(final) and prov is not None:
        step = int(prov.get("global_step", 0))
        if not found or step > found[-1][0]:
            found.append((step, final))
    return found


def is_model_folder(folder: Path) -> bool:
    """A fully fine-tuned model's folder (``finetune: full``), not a LoRA adapter's."""
    return (Path(folder) / MODEL_WEIGHTS).is_file()


def _has_weights(folder: Path) -> bool:
    return (folder / "adapter_model.safetensors").is_file() or is_model_folder(folder)


def weights_sha256(folder: Path) -> str:
    """sha256 of a LoRA adapter (its config and weights) or of a fully fine-tuned model's
    ``config.json`` and ``model.safetensors``."""
    if not is_model_folder(folder):
        return adapter_sha256(folder)
    return files_sha256(folder, ("config.json", MODEL_WEIGHTS))


def heldout_head(cfg: TrainingConfig, max_queries: int | None) -> list[JudgedQuery]:
    """The first ``max_queries`` held-out queries, each source's share proportional to its
    size (:func:`~.splits.stratified_head`)."""
    return stratified_head(load_queries(cfg.splits.heldout, "splits.heldout"), max_queries)


def point_path(cfg: TrainingConfig, step: int) -> Path:
    """Where the point of ``step`` is cached."""
    return cfg.resolved_output_dir / "curve" / f"step-{step:06d}.json"


def curve_point(
    cfg: TrainingConfig,
    heldout: Sequence[JudgedQuery],
    step: int,
    adapter: Path | None,
    *,
    num_presentations: int,
    seed: int,
    base_points: dict[str, dict[str, Any]] | None = None,
    per_query: bool = False,
) -> dict[str, Any]:
    """The point of ``step`` (``adapter`` None: the base model, step 0), from its cache when it
    was made with the same key. ``base_points`` (one dict passed for several students) measures
    the base model once for students that serve it the same way on the same queries. With
    ``per_query`` a cached point made before per-query scores were kept is measured again."""
    key = {
        "adapter_sha256": "base" if adapter is None else weights_sha256(adapter),
        "num_presentations": num_presentations,
        "seed": seed,
        "queries": [f"{s}/{r.query.qid}" for s, r, _ in heldout],
    }
    shared = None
    if adapter is None and base_points is not None:
        blob = json.dumps({"student": cfg.student, **key}, sort_keys=True, default=str)
        shared = hashlib.sha256(blob.encode("utf-8")).hexdigest()
    make: Callable[[], dict[str, Any]] = partial(
        _measure, cfg, heldout, step, adapter, num_presentations, seed
    )
    if shared is not None and base_points is not None and shared in base_points:
        make = partial(dict, base_points[shared])  # measured for another student
    path = point_path(cfg, step)
    path.parent.mkdir(parents=True, exist_ok=True)
    if per_query:
        _drop_without_per_query(path)
    point: dict[str, Any] = cached(path, key, "point", make)
    if shared is not None and base_points is not None:
        base_points.setdefault(shared, point)
    return point


def _measure(
    cfg: TrainingConfig,
    heldout: Sequence[JudgedQuery],
    step: int,
    adapter: Path | None,
    num_presentations: int,
    seed: int,
) -> dict[str, Any]:
    """One point: the student with ``adapter`` (None: the base model) on the held-out queries."""
    cpu0 = time.process_time()
    reranker = student_reranker(cfg, adapter)
    result = evaluate_heldout(reranker, heldout, num_presentations=num_presentations, seed=seed)
    clear_model_cache()
    point = {"step": step, **{k: v for k, v in result.items() if k != "per_query"}}
    point["cpu_s"] = round(time.process_time() - cpu0, 3)  # what measuring the point cost
    point["per_query"] = {q: {k: m[k] for k in PER_QUERY} for q, m in result["per_query"].items()}
    log.info(
        "%s step %d: nDCG@10 over shuffles %.3f, τ-PSI %.3f (%d held-out queries)",
        cfg.id,
        step,
        point["ndcg_mean"],
        point["tau_psi"],
        point["num_queries"],
    )
    return point


def _drop_without_per_query(path: Path) -> None:
    """Delete a cached point measured before per-query scores were kept."""
    if path.is_file():
        old = json.loads(path.read_text(encoding="utf-8")).get("point") or {}
        if "per_query" not in old:
            path.unlink()
