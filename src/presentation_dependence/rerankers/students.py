"""A shipped student as a reranker in one call: ``pd.shipped_student("oc-sft-smollm2-135m")``.

The student's manifest (``students/<name>/student.json``) holds the reranker block it was
trained and measured with; :func:`shipped_student` builds that block with ``adapter: <name>``,
so the adapter's sha256 and base revision are checked when the model loads
(:mod:`presentation_dependence.readout.students`).
"""

from __future__ import annotations

from typing import Any

from presentation_dependence.readout.students import find_student, list_students, read_manifest
from presentation_dependence.rerankers.base import Reranker, build_reranker

__all__ = ["list_students", "shipped_student"]


def shipped_student(name: str, **overrides: Any) -> Reranker:
    """The reranker of shipped student ``name``; ``overrides`` change serving options
    (``device``, ``batch_size``, ``max_passage_chars``...), not the model or the template."""
    block = {**read_manifest(find_student(name)).serving, **overrides, "adapter": name}
    block.pop("adapter_path", None)
    return build_reranker(block.pop("reranker_class", "GradeReranker"), **block)
