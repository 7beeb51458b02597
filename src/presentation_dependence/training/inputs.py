"""What a student is trained from, by content: the training data and the base model's weights.

A training config names its inputs by path (``silver.path``, ``student.model_name``), so the same
config can meet other content later. :class:`TrainingInputs` fingerprints both:

* ``data``: :func:`data_fingerprint`, sha256 of what training reads from the silver queries
  (query and candidate ids and texts, the labels, the order);
* ``base``: :meth:`~presentation_dependence.models.embedded.ResolvedModel.fingerprint` of the
  base model (a revision, or ``files-sha256:`` over a local folder's config and weights).

Both are recorded in ``checkpoints/run.json`` and in the finished student's provenance
(``training_data_sha256``, ``base_model_fingerprint``); :meth:`TrainingInputs.problem` says why a
recorded pair is not today's, and a resume or a finished folder of other inputs is refused.
A record from before a fingerprint was kept is not compared on it.

:func:`check_silver_settings` compares the silver file's header with the config's ``silver``
block (teacher, T, seed, given order, data blocks, calibration): labels made otherwise are not
the config's, whatever the frozen config says.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from presentation_dependence.errors import ConfigError
from presentation_dependence.models.embedded import resolve_model
from presentation_dependence.training.config import TrainingConfig
from presentation_dependence.training.model import Student
from presentation_dependence.training.silver_check import setting_differences
from presentation_dependence.training.silver_format import SilverQuery, SilverSet

__all__ = [
    "UNPINNED",
    "TrainingInputs",
    "check_silver_settings",
    "data_fingerprint",
    "training_inputs",
]

UNPINNED = "unpinned:"  # how ResolvedModel.fingerprint names a base it cannot fingerprint


def data_fingerprint(queries: Sequence[SilverQuery], cfg: TrainingConfig) -> str:
    """sha256 of what training reads from the silver queries, in order (texts, labels, order)."""
    h = hashlib.sha256()
    for q in queries:
        item: dict[str, Any] = {
            "key": q.key,
            "query": q.query,
            "candidates": [[c.docid, c.text] for c in q.candidates],
            "labels": q.labels(cfg.teacher_orders).tolist(),
        }
        if cfg.view_orders == "teacher":
            item["first_order"] = q.presentations[0].tolist()
        h.update(json.dumps(item, ensure_ascii=False).encode("utf-8") + b"\n")
    return h.hexdigest()


@dataclass(frozen=True)
class TrainingInputs:
    """The content fingerprints of one training's inputs (and where they were read)."""

    data: str
    base: str
    silver_path: str
    model_name: str

    def problem(self, data: Any, base: Any) -> str | None:
        """Why inputs recorded as ``(data, base)`` are not these (None: they are). A value not
        recorded (None) is not compared, nor a base that has no content fingerprint now (a
        hub name without a revision, or a folder that is gone: ``unpinned:``)."""
        if data is not None and data != self.data:
            return (
                "other training data (the silver queries or labels read from "
                f"{self.silver_path} changed since)"
            )
        if base is not None and base != self.base and not self.base.startswith(UNPINNED):
            return (
                f"another base model ({base}; the weights of {self.model_name} are now {self.base})"
            )
        return None


def check_silver_settings(silver: SilverSet, cfg: TrainingConfig) -> None:
    """Refuse silver labels made with settings other than ``cfg.silver``'s. A config whose
    ``silver.data`` is empty (it cannot make its labels) is not compared on the data blocks."""
    for header in silver.headers:
        diffs = setting_differences(
            header, cfg.silver, data=bool(cfg.silver.data), calibration=True
        )
        if diffs:
            raise ConfigError(
                f"the silver labels in {cfg.silver.path} were not made with this config's "
                f"silver block: {'; '.join(diffs)}. Fix: make them for this config "
                "(presdep silver CONFIG, with silver.path elsewhere or --force), or set the "
                "silver block to what the file was made with"
            )


def training_inputs(
    cfg: TrainingConfig, silver: SilverSet, student: Student | None = None
) -> TrainingInputs:
    """The inputs of training ``cfg`` on ``silver`` (its settings checked first), the base
    resolved as :func:`~.model.load_student` resolves it (or ``student``'s)."""
    check_silver_settings(silver, cfg)
    opts = cfg.student_options
    resolved = student.resolved if student is not None else None
    if resolved is None:
        resolved = resolve_model(opts.model_name, opts.revision)
    return TrainingInputs(
        data=data_fingerprint(silver.queries, cfg),
        base=resolved.fingerprint(),
        silver_path=str(cfg.silver.path),
        model_name=resolved.model_name,
    )
