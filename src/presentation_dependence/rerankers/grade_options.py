"""Options of the expected-grade readout rerankers (:mod:`.grade`; docs/SCORING.md).

One frozen dataclass per reranker class, validated at construction: the chunk geometry, the
template and its grade labels, the attention and compile switches, and the adapter (a trained
folder, or a shipped student by name, checked against its manifest).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from presentation_dependence.errors import ConfigError
from presentation_dependence.fields import check_counts, opt
from presentation_dependence.readout.adapter import resolve_adapter
from presentation_dependence.readout.options import BatchedModelOptions
from presentation_dependence.readout.prompt import get_template
from presentation_dependence.readout.speed import check_attn_implementation, check_compile
from presentation_dependence.readout.students import find_student, read_manifest
from presentation_dependence.rerankers.base import RerankerOptions

__all__ = [
    "Gemma4GradeOptions",
    "GradeRerankerOptions",
    "Granite41GradeOptions",
    "PointwiseGradeOptions",
    "Qwen3InstructGradeOptions",
]

_PLACEMENTS = ("sequential", "round_robin")


@dataclass(frozen=True)
class GradeRerankerOptions(BatchedModelOptions, RerankerOptions):
    """Options of the expected-grade readout rerankers (see docs/SCORING.md)."""

    chunk_size: int = opt(20, "B: candidates per prompt (20 passages, 10 QA, 4 responses)")
    max_passage_chars: int | None = opt(1200, "cut each passage to this many characters")
    max_prompt_tokens: int | None = opt(None, "token budget; null = the model's context")
    attn_implementation: Literal["sdpa", "eager"] = opt(
        "sdpa", "attention kernel: sdpa (fused, causal fast path) or eager (docs/BENCHMARKS.md)"
    )
    compile: bool | Literal["auto"] = opt(
        "auto",
        "torch.compile the decoder layers (auto = in bfloat16 on CPU with a C++ compiler, where "
        "it pays: ~1.2x readout, ~1.5x training step on AMX; off in float32, ~1.0x on AVX2, and "
        "on GPU); scores differ from eager by ~1e-6, bit-identical across processes and resumes "
        "(docs/SCORING.md section 4)",
    )
    template: str = opt("pathc_grade_v1", "readout template id (docs/SCORING.md)")
    grade_labels: tuple[str, ...] = opt(
        ("0", "1", "2", "3"), "the text of grades 0..3; each must be one token in context"
    )
    placement: Literal["sequential", "round_robin"] = opt(
        "sequential",
        "how candidates fill chunks: sequential (chunk c = input positions cB..cB+B-1) or "
        "round_robin (C = ceil(n/B) chunks, input position i -> chunk i mod C)",
    )
    adapter_path: str | None = opt(
        None,
        "a trained LoRA adapter folder (docs/TRAINING.md) on top of model_name, not merged; "
        "null = the base model alone",
    )
    adapter: str | None = opt(
        None,
        "a shipped student by name (students/, 'presdep student list'), checked against its "
        "recorded sha256 and base model; null = none (or adapter_path)",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.adapter_path is not None and (
            not isinstance(self.adapter_path, str) or not self.adapter_path
        ):
            raise ConfigError(f"adapter_path must be a path or null, got {self.adapter_path!r}")
        self._check_student()
        check_counts(self, "chunk_size")
        check_counts(self, "max_passage_chars", nullable=True)
        check_counts(self, "max_prompt_tokens", nullable=True, minimum=16)
        check_attn_implementation(self.attn_implementation)
        check_compile(self.compile)
        if self.placement not in _PLACEMENTS:
            raise ConfigError(f"placement must be one of {_PLACEMENTS}, got {self.placement!r}")
        template = get_template(self.template)
        labels = self.grade_labels
        if isinstance(labels, str) or not isinstance(labels, Sequence):
            raise ConfigError(f"grade_labels must be a list of strings, got {labels!r}")
        labels = tuple(labels)
        object.__setattr__(self, "grade_labels", labels)  # a YAML list becomes a tuple
        if len(labels) != template.num_grades:
            raise ConfigError(
                f"template {self.template!r} grades on {template.num_grades} levels; "
                f"grade_labels has {len(labels)}: {labels!r}"
            )
        if not all(isinstance(lab, str) and lab for lab in labels) or len(set(labels)) != len(
            labels
        ):
            raise ConfigError(f"grade_labels must be distinct non-empty strings, got {labels!r}")

    def _check_student(self) -> None:
        """A shipped student exists and is served as it was trained (model and template)."""
        if self.adapter is None:
            return
        if not isinstance(self.adapter, str) or not self.adapter:
            raise ConfigError(
                f"adapter must be a shipped student's name or null, got {self.adapter!r}"
            )
        if self.adapter_path is not None:
            raise ConfigError(
                "set adapter (a shipped student) or adapter_path (an adapter folder), not both",
                key="reranker.adapter",
            )
        student = read_manifest(find_student(self.adapter))
        for key in ("model_name", "template"):
            trained = student.serving.get(key)
            if trained is not None and getattr(self, key) != trained:
                raise ConfigError(
                    f"shipped student {self.adapter!r} was trained with {key} {trained!r}; "
                    f"this config has {getattr(self, key)!r}. Fix: set reranker.{key}: {trained}",
                    key=f"reranker.{key}",
                )

    def adapter_folder(self) -> Path | None:
        """The adapter folder to attach: the shipped student's or ``adapter_path``'s; None."""
        if self.adapter is not None:
            return find_student(self.adapter)
        if self.adapter_path is not None:
            return resolve_adapter(self.adapter_path)
        return None


@dataclass(frozen=True)
class Qwen3InstructGradeOptions(GradeRerankerOptions):
    model_name: str = opt("Qwen/Qwen3-4B-Instruct-2507", "a Qwen3 instruct model")


@dataclass(frozen=True)
class Gemma4GradeOptions(GradeRerankerOptions):
    model_name: str = opt("google/gemma-4-E4B-it", "a Gemma 4 instruction-tuned model")


@dataclass(frozen=True)
class Granite41GradeOptions(GradeRerankerOptions):
    model_name: str = opt("ibm-granite/granite-4.1-3b", "a Granite 4.1 instruct model")


@dataclass(frozen=True)
class PointwiseGradeOptions(GradeRerankerOptions):
    """The readout with one candidate per prompt (B = 1)."""

    chunk_size: int = opt(1, "must be 1: one candidate per prompt")

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.chunk_size != 1:
            raise ConfigError(
                f"PointwiseGradeReranker scores one candidate per prompt: chunk_size must be 1, "
                f"got {self.chunk_size}. Fix: use GradeReranker for B > 1"
            )
