"""Run folders: ``runs/<ID>/<timestamp>/`` with the frozen config, provenance and results.

Layout (docs/RUN-ARTIFACTS.md)::

    resolved_config.yaml     the config as run (YAML < environment < --override), frozen
    provenance.json          {"invocations": [...]}: one record per command run in this folder
    qrels.txt                the judgements the run is evaluated against (copied at run time)
    per_query_results/       one JSON per query, written atomically: the resume unit
    run.trec                 the TREC run, written once every query has a result
    rerank_results.json      the same lists in rank_llm's Result form (texts and scores)
    metrics.json             pytrec_eval per query and means (EvalManager)
    run.log                  the log of every invocation (secrets redacted)
"""

from __future__ import annotations

import contextlib
import datetime as dt
import difflib
import json
import logging
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import yaml

from presentation_dependence.config import ExperimentConfig
from presentation_dependence.errors import ConfigError, PresdepError
from presentation_dependence.io.atomic import atomic_write_text
from presentation_dependence.secrets import RedactingFilter, redact

__all__ = ["RunFolder", "default_run_dir"]

log = logging.getLogger(__name__)

RESOLVED_CONFIG = "resolved_config.yaml"
PROVENANCE = "provenance.json"
PER_QUERY = "per_query_results"
RUN_FILE = "run.trec"
RANKLLM_RESULTS = "rerank_results.json"
QRELS_FILE = "qrels.txt"
METRICS = "metrics.json"
LOG_FILE = "run.log"


def default_run_dir(cfg: ExperimentConfig, now: dt.datetime | None = None) -> Path:
    """``<output_root>/<id>/<UTC timestamp>``."""
    now = now or dt.datetime.now(dt.timezone.utc)
    return Path(cfg.output_root) / cfg.id / now.strftime("%Y%m%dT%H%M%SZ")


def _same_config(old_yaml: str, cfg: ExperimentConfig) -> bool:
    """True when the folder's frozen config, validated by today's code, equals ``cfg``.

    A folder written before an option existed has no line for it; it still matches when the
    option's default is what ``cfg`` uses, so adding options does not orphan run folders.
    """
    from presentation_dependence.config.experiment import config_from_raw

    try:
        raw = yaml.safe_load(old_yaml) or {}
        return bool(config_from_raw(raw, cfg.id) == cfg)
    except (PresdepError, yaml.YAMLError, TypeError, ValueError):
        return False


class RunFolder:
    """Paths and atomic, redacted writes inside one run folder."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    # --- paths -------------------------------------------------------------------------------
    @property
    def resolved_config(self) -> Path:
        return self.path / RESOLVED_CONFIG

    @property
    def run_file(self) -> Path:
        return self.path / RUN_FILE

    @property
    def qrels_file(self) -> Path:
        return self.path / QRELS_FILE

    @property
    def metrics_file(self) -> Path:
        return self.path / METRICS

    @property
    def per_query_dir(self) -> Path:
        return self.path / PER_QUERY

    def per_query_file(self, qid: str) -> Path:
        # quote() keeps qids with '/' or spaces safe as file names, reversibly.
        return self.per_query_dir / f"{quote(qid, safe='')}.json"

    def finished_qids(self) -> set[str]:
        if not self.per_query_dir.is_dir():
            return set()
        return {unquote(p.stem) for p in self.per_query_dir.glob("*.json")}

    # --- writes --------------------------------------------------------------------------------
    def write_text(self, rel: str | Path, text: str) -> Path:
        """Atomically write ``text`` (secrets redacted) to ``rel`` inside the folder."""
        target = self.path / rel
        atomic_write_text(target, redact(text))
        return target

    def write_json(self, rel: str | Path, obj: Any) -> Path:
        return self.write_text(rel, json.dumps(obj, indent=1, ensure_ascii=False) + "\n")

    def read_json(self, rel: str | Path) -> Any:
        return json.loads((self.path / rel).read_text(encoding="utf-8"))

    def freeze_config(self, cfg: ExperimentConfig) -> None:
        """Write ``resolved_config.yaml``; refuse a folder made with a different config."""
        text = redact(cfg.to_yaml())
        if self.resolved_config.exists():
            old = self.resolved_config.read_text(encoding="utf-8")
            if old != text and not _same_config(old, cfg):
                diff = "".join(
                    difflib.unified_diff(
                        old.splitlines(True), text.splitlines(True), "in the run folder", "now"
                    )
                )
                raise ConfigError(
                    f"{self.resolved_config} was written by a different config, so its results "
                    f"cannot be reused. Use a new --run-dir, or rerun with the same config.\n{diff}"
                )
            return
        self.write_text(RESOLVED_CONFIG, text)

    def load_config_yaml(self) -> str:
        if not self.resolved_config.exists():
            raise ConfigError(
                f"{self.path} has no {RESOLVED_CONFIG}: it is not a run folder "
                "(make one with 'presdep run CONFIG --run-dir DIR')"
            )
        return self.resolved_config.read_text(encoding="utf-8")

    def append_provenance(self, record: Mapping[str, Any]) -> None:
        """Append one invocation's record to ``provenance.json`` (atomic rewrite)."""
        p = self.path / PROVENANCE
        data = json.loads(p.read_text(encoding="utf-8")) if p.exists() else {"invocations": []}
        data["invocations"].append(dict(record))
        self.write_json(PROVENANCE, data)

    @contextlib.contextmanager
    def logging_to_file(self) -> Iterator[None]:
        """Within the block, this package's log records also go to ``run.log`` (redacted)."""
        self.path.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(self.path / LOG_FILE, encoding="utf-8")
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        handler.addFilter(RedactingFilter())
        logger = logging.getLogger("presentation_dependence")
        logger.addHandler(handler)
        try:
            yield
        finally:
            logger.removeHandler(handler)
            handler.close()
