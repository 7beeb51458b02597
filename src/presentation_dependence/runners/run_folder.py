"""Run folders: ``runs/<ID>/<timestamp>/`` with the frozen config, provenance and results.

The experiment commands', the judge commands' (``presdep judge | noise``) and training's (any
config with ``to_yaml()`` and its family's ``config_from_raw``) share this machinery. Layout of an
experiment's (docs/RUN-ARTIFACTS.md)::

    resolved_config.yaml     the config as run (YAML < environment < --override), frozen
    provenance.json          {"invocations": [...]}: one record per command run in this folder
    qrels.txt                the judgements the run is evaluated against (copied at run time)
    per_query_results/       one JSON per query, written atomically: the resume unit
    run.trec                 the TREC run, written once every query has a result
    rerank_results.json      the same lists in rank_llm's Result form (texts and scores)
    metrics.json             pytrec_eval per query and means (EvalManager)
    run.log                  the log of every invocation (secrets redacted)
    .locks/                  lock files of processes sharing the folder (provenance, claims)
"""

from __future__ import annotations

import contextlib
import datetime as dt
import difflib
import hashlib
import json
import logging
import os
import socket
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote

import yaml

from presentation_dependence.config.experiment import config_from_raw
from presentation_dependence.errors import ConfigError, PresdepError
from presentation_dependence.fields import to_plain
from presentation_dependence.io.atomic import atomic_write_text
from presentation_dependence.io.lock import file_lock
from presentation_dependence.secrets import RedactingFormatter, redact, refuse_secret

__all__ = [
    "PROVENANCE",
    "RESOLVED_CONFIG",
    "FrozenConfig",
    "RunFolder",
    "default_run_dir",
    "invocations",
    "safe_file_stem",
]

log = logging.getLogger(__name__)

RESOLVED_CONFIG = "resolved_config.yaml"
PROVENANCE = "provenance.json"
PER_QUERY = "per_query_results"
RUN_FILE = "run.trec"
RANKLLM_RESULTS = "rerank_results.json"
QRELS_FILE = "qrels.txt"
METRICS = "metrics.json"
LOG_FILE = "run.log"
LOCKS = ".locks"  # lock files of processes sharing the folder (hidden: not results)


_MAX_STEM_BYTES = 200  # file names are limited to 255 bytes; leave room for suffixes and temps


def safe_file_stem(key: str) -> str:
    """A file name stem for any id: ``quote(key)`` (reversible, no ``/``), or for an id whose
    quoted form is longer than 200 bytes, its first 100 characters, ``~`` and 16 hex digits of
    the id's sha256 (so distinct ids keep distinct files)."""
    stem = quote(key, safe="")
    if len(stem) <= _MAX_STEM_BYTES:
        return stem
    return f"{stem[:100]}~{hashlib.sha256(key.encode('utf-8')).hexdigest()[:16]}"


class FrozenConfig(Protocol):
    """A config a run folder freezes: an experiment's, a judge task's, a training run's."""

    @property
    def id(self) -> str: ...
    def to_yaml(self) -> str: ...


class RootedConfig(FrozenConfig, Protocol):
    """A config whose run folders go under its ``output_root`` (experiments, judge tasks)."""

    @property
    def output_root(self) -> str: ...


FromRaw = Callable[[Mapping[str, Any], str], object]  # (raw mapping, config id) -> the config


def default_run_dir(cfg: RootedConfig, now: dt.datetime | None = None) -> Path:
    """``<output_root>/<id>/<UTC timestamp>``."""
    now = now or dt.datetime.now(dt.timezone.utc)
    return Path(cfg.output_root) / cfg.id / now.strftime("%Y%m%dT%H%M%SZ")


def _flat(obj: Any, ignore: Sequence[str], prefix: str = "") -> dict[str, Any]:
    """``{dotted key: value}`` of a plain config, without the keys ``ignore`` names (or under)."""
    out: dict[str, Any] = {}
    for k, v in (obj or {}).items():
        key = f"{prefix}{k}"
        if any(key == i or key.startswith(i + ".") for i in ignore):
            continue
        if isinstance(v, Mapping) and v:
            out.update(_flat(v, ignore, key + "."))
        else:
            out[key] = v
    return out


def _same_config(
    old_yaml: str, cfg: FrozenConfig, from_raw: FromRaw, ignore: Sequence[str] = ()
) -> bool:
    """True when the folder's frozen config, validated by today's code (``from_raw``), equals
    ``cfg`` on every key but the ``ignore``d ones.

    A folder written before an option existed has no line for it; it still matches when the
    option's default is what ``cfg`` uses, so adding options does not orphan run folders.
    """
    try:
        old = from_raw(yaml.safe_load(old_yaml) or {}, cfg.id)
    except (PresdepError, yaml.YAMLError, TypeError, ValueError):
        return False
    if not ignore:
        return bool(old == cfg)
    return _flat(to_plain(old), ignore) == _flat(to_plain(cfg), ignore)


def invocations(provenance: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The invocation records of a loaded ``provenance.json``: ``{"invocations": [...]}``, or the
    one flat record of a judge folder written before judge folders were run folders."""
    return list(provenance["invocations"]) if "invocations" in provenance else [dict(provenance)]


# Files derived from the config and data alone (rewritten when a folder without results takes a
# new config), not results.
_NOT_RESULTS = frozenset(
    {RESOLVED_CONFIG, PROVENANCE, LOG_FILE, QRELS_FILE, "qa/reader.json", "psi/presentations.json"}
)
_PATHS_HEADER = "# What the data path alternatives resolved to when this folder was made:"


def _paths_comment(paths: Mapping[str, str]) -> str:
    if not paths:
        return ""
    return "".join([f"{_PATHS_HEADER}\n", *(f"# data.{k} -> {v}\n" for k, v in paths.items())])


def _parse_paths_comment(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        if line.startswith("# data.") and " -> " in line:
            key, path = line[len("# data.") :].split(" -> ", 1)
            out[key] = path
    return out


def _note_holder(lock: Path) -> None:
    """Write this process's name into a claim it holds (read by :meth:`RunFolder.claim_holder`)."""
    since = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    with contextlib.suppress(OSError):
        lock.write_text(
            f"process {os.getpid()} on {socket.gethostname()} since {since}\n", encoding="utf-8"
        )


class RunFolder:
    """Paths and atomic writes inside one run folder.

    Results (:meth:`write_text`, :meth:`write_json`) are written as they are, never redacted; a
    secret in one (or in its file name) is refused. What describes the run (the frozen config,
    provenance, ``run.log``) is redacted (:mod:`presentation_dependence.secrets`).
    """

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
        return self.per_query_dir / f"{safe_file_stem(qid)}.json"

    # --- writes --------------------------------------------------------------------------------
    def write_text(self, rel: str | Path, text: str) -> Path:
        """Atomically write the result ``text`` to ``rel`` inside the folder, unchanged.

        A secret in ``text`` or in the file name raises
        :class:`~presentation_dependence.secrets.SecretInOutputError` before anything is written.
        """
        target = self.path / rel
        refuse_secret(str(rel), f"a file name in {self.path}")
        refuse_secret(text, str(target))
        atomic_write_text(target, text)
        return target

    def write_json(
        self, rel: str | Path, obj: Any, indent: int = 1, *, allow_nan: bool = True
    ) -> Path:
        """Write a result object as JSON (see :meth:`write_text`); ``allow_nan=False``: a NaN or
        infinity in ``obj`` raises ValueError before anything is written (strict JSON)."""
        text = json.dumps(obj, indent=indent, ensure_ascii=False, allow_nan=allow_nan)
        return self.write_text(rel, text + "\n")

    def write_redacted_text(self, rel: str | Path, text: str) -> Path:
        """Atomically write a text that describes the run (config, provenance), redacted."""
        target = self.path / rel
        atomic_write_text(target, redact(text))
        return target

    def write_redacted_json(self, rel: str | Path, obj: Any) -> Path:
        return self.write_redacted_text(rel, json.dumps(obj, indent=1, ensure_ascii=False) + "\n")

    def freeze_config(
        self,
        cfg: FrozenConfig,
        *,
        from_raw: FromRaw = config_from_raw,
        resolved_paths: Mapping[str, str] | None = None,
        ignore: Sequence[str] = (),
        fix: str = "Use a new --run-dir, or rerun with the same config.",
    ) -> None:
        """Write ``resolved_config.yaml``; refuse a folder made with a different config.

        ``from_raw`` validates a raw mapping into a config of ``cfg``'s family (default: an
        experiment's), so that a folder frozen before an option existed still matches.
        ``resolved_paths`` (``{data field: path}``, what path alternatives resolved to) is
        recorded as comment lines; when a later run resolves a field elsewhere, a warning says
        so (the per-query content fingerprints decide what can still be reused). ``ignore``
        names dotted keys that do not change the results (how a training run is watched and
        stored): a config differing only there reuses the folder, whose frozen text stays.
        ``fix`` ends the refusal.
        """
        text = redact(cfg.to_yaml()) + _paths_comment(resolved_paths or {})
        if self.resolved_config.exists():
            old = self.resolved_config.read_text(encoding="utf-8")
            if old == text or _same_config(old, cfg, from_raw, ignore):
                self._warn_moved_paths(old, resolved_paths or {})
                return
            if self.has_results():
                diff = "".join(
                    difflib.unified_diff(
                        old.splitlines(True), text.splitlines(True), "in the run folder", "now"
                    )
                )
                raise ConfigError(
                    f"{self.resolved_config} was written by a different config, so its results "
                    f"cannot be reused. {fix}\n{diff}"
                )
            # A start that failed before any result (a typo, a hosted 400 fixed by a config
            # change) must not lock the folder to the config that failed.
            log.warning("%s holds no results yet: replacing its config with this one", self.path)
            self.qrels_file.unlink(missing_ok=True)
        self.write_redacted_text(RESOLVED_CONFIG, text)

    @staticmethod
    def _warn_moved_paths(old_yaml: str, resolved_paths: Mapping[str, str]) -> None:
        before = _parse_paths_comment(old_yaml)
        for key, path in resolved_paths.items():
            if key in before and before[key] != redact(path):
                log.warning(
                    "data.%s now resolves to %s; this folder was made from %s",
                    key,
                    path,
                    before[key],
                )

    def has_results(self) -> bool:
        """True when the folder holds any result: a file other than the frozen config, the
        provenance, the log, ``qrels.txt``, ``qa/reader.json``, ``psi/presentations.json`` and
        hidden (lock) files."""
        if not self.path.is_dir():
            return False
        for p in self.path.rglob("*"):
            rel = p.relative_to(self.path)
            if p.is_dir() or any(part.startswith(".") for part in rel.parts):
                continue
            if rel.as_posix() not in _NOT_RESULTS:
                return True
        return False

    def load_config_yaml(self) -> str:
        if not self.resolved_config.exists():
            raise ConfigError(
                f"{self.path} has no {RESOLVED_CONFIG}: it is not a run folder "
                "(make one with 'presdep run CONFIG --run-dir DIR')"
            )
        return self.resolved_config.read_text(encoding="utf-8")

    def append_provenance(self, record: Mapping[str, Any]) -> None:
        """Append one invocation's record to ``provenance.json`` (atomic rewrite), under the
        folder's lock so that processes sharing the folder lose no record (an old flat record
        becomes the first invocation)."""
        p = self.path / PROVENANCE
        with file_lock(self.path / LOCKS / "provenance.lock"):
            done = invocations(json.loads(p.read_text(encoding="utf-8"))) if p.exists() else []
            self.write_redacted_json(PROVENANCE, {"invocations": [*done, dict(record)]})

    def _claim_file(self, key: str) -> Path:
        return self.path / LOCKS / f"{safe_file_stem(key)}.lock"

    @contextlib.contextmanager
    def claim(self, key: str, *, wait: bool = False) -> Iterator[bool]:
        """Claim the unit of work ``key`` (a query) for this process: yields False at once when
        another process holds it (``wait``: blocks until it lets go, then yields True). The
        claim ends with the block, or with the process. The holder writes who it is into the
        claim's lock file (:meth:`claim_holder`)."""
        lock = self._claim_file(key)
        with file_lock(lock, blocking=wait) as held:
            try:
                if held:
                    _note_holder(lock)
                yield held
            finally:
                if held:  # tidy; a waiter that opened it re-checks the result after locking
                    lock.unlink(missing_ok=True)

    def claim_holder(self, key: str) -> str:
        """Who holds the claim ``key`` (process, host, since when), as the holder wrote it;
        ``another process`` when it wrote nothing readable (yet)."""
        try:
            text = self._claim_file(key).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            text = ""
        return text or "another process"

    @contextlib.contextmanager
    def logging_to_file(self) -> Iterator[None]:
        """Within the block, this package's log records also go to ``run.log`` (redacted)."""
        self.path.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(self.path / LOG_FILE, encoding="utf-8")
        handler.setFormatter(RedactingFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        logger = logging.getLogger("presentation_dependence")
        logger.addHandler(handler)
        try:
            yield
        finally:
            logger.removeHandler(handler)
            handler.close()
