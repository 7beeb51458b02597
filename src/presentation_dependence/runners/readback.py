"""A run folder read back, typed: its frozen config and its provenance.

:func:`folder_config` validates ``resolved_config.yaml`` through the loader of the folder's
config family (an experiment's by default; a judge task's or a training run's ``from_raw``
otherwise), so a reader gets the same dataclass the run was made with and never indexes the
YAML by string. :func:`read_provenance` reads ``provenance.json`` into a :class:`Provenance`,
whose :meth:`~Provenance.run_invocation` is the one rule for "the run's invocation" (its
commit, reranker, seeds) that every summary of a folder uses.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, overload

import yaml

from presentation_dependence.config import ExperimentConfig
from presentation_dependence.config.experiment import config_from_raw
from presentation_dependence.errors import PresdepError
from presentation_dependence.provenance import cpu_label
from presentation_dependence.runners.run_folder import PROVENANCE, RunFolder, invocations

__all__ = ["Provenance", "folder_config", "read_provenance", "recorded_cpus", "recorded_dtype"]

C = TypeVar("C")


@overload
def folder_config(run_dir: str | Path) -> ExperimentConfig: ...
@overload
def folder_config(run_dir: str | Path, from_raw: Callable[[Mapping[str, Any], str], C]) -> C: ...
def folder_config(
    run_dir: str | Path, from_raw: Callable[[Mapping[str, Any], str], Any] = config_from_raw
) -> Any:
    """The config ``run_dir`` was made with: its ``resolved_config.yaml`` validated by
    ``from_raw(raw, id)`` (default: an experiment's), the id the one it ran under (the folder's
    name when the file has none). Raises ``ConfigError`` when the folder has no frozen config and
    ``PresdepError`` when it is not a YAML mapping."""
    folder = RunFolder(run_dir)
    raw = yaml.safe_load(folder.load_config_yaml()) or {}
    if not isinstance(raw, Mapping):
        raise PresdepError(f"{folder.resolved_config}: not a YAML mapping")
    return from_raw(raw, str(raw.get("id") or folder.path.name))


@dataclass(frozen=True)
class Provenance:
    """A run folder's ``provenance.json``: one record per command run in the folder, in order
    (an old flat record, of a judge folder from before judge folders were run folders, is the
    only invocation)."""

    invocations: tuple[Mapping[str, Any], ...] = ()

    def phase(self, name: str) -> list[Mapping[str, Any]]:
        """The invocations of one phase (``run``, ``eval``, ``psi``, ``psi-runs``, ``train``...)."""
        return [inv for inv in self.invocations if inv.get("phase") == name]

    def run_invocation(self) -> Mapping[str, Any]:
        """The run's invocation: the one that produced the folder's final outputs.

        That is the **last** ``run`` invocation (a resumed or sharded run's last command is the
        one that finished ``run.trec``; an earlier one may have stopped or run other code); with
        no ``run`` invocation (a folder of another phase only, or a flat record), the last
        invocation; ``{}`` when there is none. Its ``git`` names the run's commit.
        """
        runs = self.phase("run")
        if runs:
            return runs[-1]
        return self.invocations[-1] if self.invocations else {}

    def first_dtype(self) -> str | None:
        """The dtype the folder's first scoring command resolved (its ``reranker.dtype``), or
        None when no command recorded one."""
        for inv in self.invocations:
            reranker = inv.get("reranker")
            if isinstance(reranker, Mapping) and isinstance(reranker.get("dtype"), str):
                return str(reranker["dtype"])
        return None

    @property
    def commit(self) -> str | None:
        """The commit of :meth:`run_invocation` (None when it recorded none)."""
        commit = (self.run_invocation().get("git") or {}).get("commit")
        return None if commit is None else str(commit)


def read_provenance(run_dir: str | Path) -> Provenance:
    """``run_dir``'s :class:`Provenance`; an empty one when it has no ``provenance.json``."""
    path = Path(run_dir) / PROVENANCE
    if not path.is_file():
        return Provenance()
    return Provenance(tuple(invocations(json.loads(path.read_text(encoding="utf-8")))))


def recorded_dtype(folder: str | Path) -> str | None:
    """The dtype ``folder``'s scores were computed in, as its first scoring command resolved it
    (``provenance.json``); None for a folder that has scored nothing yet."""
    return read_provenance(folder).first_dtype()


def recorded_cpus(folder: str | Path) -> list[str]:
    """The processors a run folder's commands scored on, as ``provenance.json`` recorded them
    (``model [flags]``, in first-seen order; ``not recorded`` for a command from before the
    processor was recorded): bfloat16 scores depend on the kernels the processor selects. A
    command whose reranker ran on a GPU (``reranker.device`` cuda) is labelled by that GPU; the
    commands that scored nothing (``eval``) count only in a folder where none records a reranker."""
    invs = read_provenance(folder).invocations
    seen: dict[str, None] = {}
    for inv in [i for i in invs if "reranker" in i] or invs:
        seen.setdefault(_processor_label(inv), None)
    return list(seen)


def _processor_label(inv: Mapping[str, Any]) -> str:
    reranker = inv.get("reranker")
    device = str(reranker.get("device", "")) if isinstance(reranker, Mapping) else ""
    if device.startswith("cuda"):
        name = reranker.get("accelerator") or "model not recorded"  # type: ignore[union-attr]
        return f"GPU {name} ({device}; host {cpu_label(inv.get('cpu'))})"
    return cpu_label(inv.get("cpu"))
