"""An experiment config from a TREC run and its collection, without a YAML file.

What ``presdep rerank RUN --beir FOLDER`` (or ``--corpus C --topics T``) builds: the run's top-k
per query over a BEIR folder (``BeirLoader``) or a TSV/JSONL corpus and topics file
(``TrecRunLoader``), reranked by a registered reranker (by class name) or a shipped student
(by name), with the same strict validation, overrides and run folder as a YAML config. The
config is frozen into the run folder as ``resolved_config.yaml`` like any other, so ``presdep
run`` on that file reproduces it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from presentation_dependence.config.experiment import ExperimentConfig, config_from_raw
from presentation_dependence.config.loader import apply_overrides
from presentation_dependence.errors import ConfigError
from presentation_dependence.readout.students import find_student, list_students, read_manifest
from presentation_dependence.registry import did_you_mean
from presentation_dependence.rerankers import RERANKERS

__all__ = ["adhoc_config", "reranker_block"]


def reranker_block(name: str) -> dict[str, Any]:
    """The reranker block ``name`` selects: a registered reranker class (its defaults) or a
    shipped student (the block it was trained and measured with, its adapter checked)."""
    if name in RERANKERS.names():
        return {"reranker_class": name}
    if name in list_students():
        block = {**read_manifest(find_student(name)).serving, "adapter": name}
        block.pop("adapter_path", None)
        return block
    choices = [*RERANKERS.names(), *list_students()]
    raise ConfigError(
        f"--reranker {name!r}: neither a registered reranker nor a shipped student."
        f"{did_you_mean(name, choices)} Rerankers: {', '.join(RERANKERS.names())}; students: "
        f"{', '.join(list_students()) or 'none'}"
    )


def adhoc_config(
    run: str | Path,
    *,
    beir: str | Path | None = None,
    corpus: str | Path | None = None,
    topics: str | Path | None = None,
    qrels: str | Path | None = None,
    reranker: str = "GradeReranker",
    top_k: int = 20,
    overrides: Sequence[str] = (),
) -> ExperimentConfig:
    """The experiment config reranking the top ``top_k`` of ``run`` (see the module).

    Give ``beir`` (a BEIR folder: corpus.jsonl, queries.jsonl, qrels/test.tsv) or both
    ``corpus`` and ``topics``; ``qrels`` judges the run (a BEIR folder's own qrels otherwise).
    ``overrides`` are ``key=value`` assignments as ``--override`` takes them."""
    if (beir is None) == (corpus is None and topics is None):
        raise ConfigError("give --beir FOLDER, or --corpus FILE and --topics FILE (not both)")
    if beir is None and (corpus is None or topics is None):
        raise ConfigError("--corpus and --topics go together (the passages and the queries)")
    data: dict[str, Any] = {"run": str(run), "top_k": top_k}
    if beir is not None:
        data |= {"dataloader_class": "BeirLoader", "path": str(beir)}
    else:
        data |= {"dataloader_class": "TrecRunLoader", "corpus": str(corpus), "topics": str(topics)}
    if qrels is not None:
        data["qrels"] = str(qrels)
    stem = Path(run).name.removesuffix(".gz").rsplit(".", 1)[0] or "run"
    config_id = f"rerank-{stem}-{reranker}".replace("/", "-")
    raw = {
        "description": f"{reranker} over the top {top_k} of {run}",
        "reranker": reranker_block(reranker),
        "data": data,
    }
    return config_from_raw(apply_overrides(raw, overrides, "--override"), config_id)
