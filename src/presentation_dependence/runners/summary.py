"""Summarise evaluated run folders as a Markdown table (docs/RESULTS.md is written this way)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from presentation_dependence.errors import PresdepError
from presentation_dependence.io.markdown import markdown_table
from presentation_dependence.records import RankResult
from presentation_dependence.runners.readback import folder_config, read_provenance
from presentation_dependence.runners.run_folder import METRICS, RunFolder

__all__ = ["run_summary", "summary_markdown"]


def run_summary(run_dir: str | Path) -> dict[str, Any]:
    """The config id, reranker, model revision, dtype, data, query count and mean metrics."""
    folder = RunFolder(run_dir)
    if not folder.metrics_file.exists():
        raise PresdepError(
            f"{folder.path} has no {METRICS}: run 'presdep eval --run-dir {folder.path}'"
        )
    cfg = folder_config(folder.path)
    metrics = json.loads(folder.metrics_file.read_text(encoding="utf-8"))
    prov = read_provenance(folder.path)
    rer = prov.run_invocation().get("reranker") or {}
    costs = [
        RankResult.from_dict(json.loads(p.read_text(encoding="utf-8"))).cost
        for p in sorted(folder.per_query_dir.glob("*.json"))
    ]
    passes = sum(c.forward_passes for c in costs if c is not None)
    tokens = sum(c.prompt_tokens for c in costs if c is not None)
    return {
        "id": cfg.id,
        "description": cfg.description,
        "reranker_class": cfg.reranker.reranker_class,
        "model": rer.get("model_name", "—"),
        "revision": rer.get("revision", "—"),
        "dtype": rer.get("dtype", "—"),
        "top_k": cfg.data.top_k,
        "num_queries": metrics["num_queries"],
        "mean": metrics["mean"],
        "forward_passes": passes,
        "prompt_tokens": tokens,
        "commit": prov.commit,
        "run_dir": str(folder.path),
    }


def summary_markdown(run_dirs: Sequence[str | Path]) -> str:
    """One table row per run folder; columns are the union of their measures."""
    rows = [run_summary(d) for d in run_dirs]
    measures: list[str] = []
    for r in rows:
        measures += [m for m in r["mean"] if m not in measures]
    head = [
        "config",
        "reranker",
        "model (revision)",
        "dtype",
        "top-k",
        "queries",
        *measures,
        "forward passes",
        "prompt tokens",
    ]
    table = []
    for r in rows:
        model = r["model"] if r["model"] == "—" else f"`{r['model']}` ({r['revision']})"
        cells = [
            f"`{r['id']}`",
            r["reranker_class"],
            model,
            r["dtype"],
            str(r["top_k"]),
            str(r["num_queries"]),
        ]
        cells += [f"{r['mean'][m]:.4f}" if m in r["mean"] else "—" for m in measures]
        cells += [str(r["forward_passes"]), str(r["prompt_tokens"])]
        table.append(cells)
    return "\n".join(markdown_table(head, table)) + "\n"
