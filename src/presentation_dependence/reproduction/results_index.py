"""``docs/results_index.yaml``: one entry per recorded run folder (config id, commit, metrics, seeds).

The index ships empty (``results: []``). :func:`record_result` reads an *evaluated* run folder
(``resolved_config.yaml``, ``provenance.json``, ``metrics.json`` and, when present,
``psi/psi_metrics.json``) and adds or replaces its entry, keyed by the run folder, atomically.
Where the data block points at a folder with ``dataset_meta.yaml``, the entry also carries the
first-stage record of the run that made the candidates, so a number is never separated from the
retriever behind it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from presentation_dependence.config.loader import read_yaml_mapping
from presentation_dependence.errors import ConfigError, PresdepError
from presentation_dependence.firststage.meta import META_FILE, read_dataset_meta
from presentation_dependence.io.atomic import atomic_write_text
from presentation_dependence.provenance import utc_now
from presentation_dependence.runners.readback import folder_config, read_provenance
from presentation_dependence.runners.run_folder import (
    METRICS,
    PROVENANCE,
    RESOLVED_CONFIG,
)

__all__ = ["INDEX", "SCHEMA", "load_index", "record_result"]

INDEX = Path("docs/results_index.yaml")
SCHEMA = "presdep.results_index/v1"
_HEAD = (
    "# Results recorded from run folders by scripts/record_result.py (do not edit by hand).\n"
    "# One entry per run folder: config id, commit, seeds, metrics, first stage.\n"
)
_ENTRY_KEYS = {
    "config_id", "run_dir", "recorded_utc", "commit", "dirty", "seeds", "description",
    "reranker", "data", "first_stage", "eval", "num_queries", "metrics", "psi", "artifact", "note",
}  # fmt: skip


def load_index(path: str | Path = INDEX) -> list[dict[str, Any]]:
    """The entries of an index file (strict: schema, a list of mappings with known keys)."""
    path = Path(path)
    if not path.exists():
        return []
    raw = read_yaml_mapping(path)
    if set(raw) - {"schema", "results"}:
        raise ConfigError(f"{path}: expected exactly the keys 'schema' and 'results'")
    if raw.get("schema") != SCHEMA:
        raise ConfigError(f"{path}: schema {raw.get('schema')!r}, expected {SCHEMA}")
    results = raw.get("results") or []
    if not isinstance(results, list):
        raise ConfigError(f"{path}: 'results' must be a list")
    for i, entry in enumerate(results):
        if not isinstance(entry, dict) or set(entry) - _ENTRY_KEYS:
            unknown = sorted(set(entry) - _ENTRY_KEYS) if isinstance(entry, dict) else entry
            raise ConfigError(f"{path}: results[{i}] has unknown keys {unknown}")
    return results


def _first_stage(data: dict[str, Any]) -> dict[str, Any] | None:
    """The dataset_meta run record behind the data block's first existing run (or path)."""
    resolved: dict[str, str] = {}
    for key in ("run", "path"):
        spec = data.get(key)
        for p in [spec] if isinstance(spec, str) else list(spec or []):
            path = Path(p)
            if not path.exists():
                continue
            resolved[key] = p
            folder = path if path.is_dir() else path.parent
            if not (folder / META_FILE).is_file():
                break
            meta = read_dataset_meta(folder)
            run_name = path.name if key == "run" else meta.files.get("fixture_run")
            record = meta.runs.get(run_name or "")
            if record is None:
                break
            return {
                "resolved": resolved,
                "dataset": meta.dataset,
                "run_file": str(folder / run_name) if run_name else None,
                "retriever": record.retriever,
                "description": record.description,
                "parameters": record.parameters,
                "evaluation": record.evaluation,
            }
    return {"resolved": resolved} if resolved else None


_RERANKER_KEYS = ("reranker_class", "model_name", "revision", "dtype", "template", "options")
# the query selection is part of what a result means (query_sample_seed: which queries)
_DATA_KEYS = (
    "dataloader_class",
    "top_k",
    "max_queries",
    "query_sample_seed",
    "judged_only",
    "split",
)


def _psi_summary(folder: Path) -> dict[str, Any] | None:
    path = folder / "psi" / "psi_metrics.json"
    if not path.is_file():
        return None
    psi = json.loads(path.read_text(encoding="utf-8"))
    out: dict[str, Any] = {}
    for var, block in (psi.get("variants") or {}).items():
        s = block.get("summary", {})
        out[var] = {
            k: round(float(s[k]["mean"]), 4)
            for k in ("tau_psi", "ndcg_mean", "jaccard_topk")
            if isinstance(s.get(k), dict) and "mean" in s[k]
        }
    return out or None


def record_result(
    run_dir: str | Path,
    *,
    index: str | Path = INDEX,
    artifact: str | None = None,
    note: str | None = None,
) -> dict[str, Any]:
    """Add (or replace) ``run_dir``'s entry in ``index``; returns the entry."""
    folder = Path(run_dir)
    missing = [n for n in (RESOLVED_CONFIG, PROVENANCE, METRICS) if not (folder / n).is_file()]
    if missing:
        hint = f" (run 'presdep eval --run-dir {folder}')" if METRICS in missing else ""
        raise PresdepError(
            f"{folder} is not an evaluated run folder: no {', '.join(missing)}{hint}"
        )
    cfg = folder_config(folder).to_plain()
    metrics = json.loads((folder / METRICS).read_text(encoding="utf-8"))
    inv = read_provenance(folder).run_invocation()
    git = inv.get("git") or {}
    data = dict(cfg.get("data") or {})
    entry: dict[str, Any] = {
        "config_id": cfg["id"],
        "run_dir": str(folder),
        "recorded_utc": utc_now(),
        "commit": git.get("commit"),
        "dirty": git.get("dirty"),
        "seeds": inv.get("seeds") or {"seed": cfg.get("seed")},
        "description": cfg.get("description", ""),
        "reranker": {
            k: v
            for k, v in (inv.get("reranker") or cfg.get("reranker") or {}).items()
            if k in _RERANKER_KEYS
        },
        "data": {k: data.get(k) for k in _DATA_KEYS},
        "first_stage": _first_stage(data),
        "eval": {"relevance_level": metrics.get("relevance_level")},
        "num_queries": metrics.get("num_queries"),
        "metrics": {k: round(float(v), 4) for k, v in (metrics.get("mean") or {}).items()},
        "psi": _psi_summary(folder),
        "artifact": artifact,
        "note": note,
    }
    entries = [e for e in load_index(index) if e.get("run_dir") != str(folder)] + [entry]
    body = yaml.safe_dump(
        {"schema": SCHEMA, "results": entries}, sort_keys=False, allow_unicode=True
    )
    atomic_write_text(index, _HEAD + body)
    return entry
