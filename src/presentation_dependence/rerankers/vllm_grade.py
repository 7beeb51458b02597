"""VllmGradeReranker: the expected-grade readout (GradeReranker) on the vLLM backend.

Same template, prompts, skeleton, chunking and scores as :class:`GradeReranker`; only the
backend differs (``readout/vllm_backend.py``: exact P(grade) at every slot, tensor and data
parallelism, batch-invariant mode recorded in provenance). Needs the ``vllm`` extra and a GPU.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, cast

from presentation_dependence.errors import ConfigError
from presentation_dependence.fields import check_counts, opt
from presentation_dependence.models.embedded import resolve_model
from presentation_dependence.readout.prompt import PromptBuilder, get_template
from presentation_dependence.rerankers.base import RERANKERS, RerankerOptions
from presentation_dependence.rerankers.grade import GradeReranker, GradeRerankerOptions

if TYPE_CHECKING:
    from presentation_dependence.readout.backend import TransformersBackend
    from presentation_dependence.readout.vllm_backend import VllmBackend

__all__ = ["VllmGradeOptions", "VllmGradeReranker"]

_ENGINES: dict[tuple[Any, ...], VllmBackend] = {}
_LOCK = threading.Lock()


@dataclass(frozen=True)
class VllmGradeOptions(GradeRerankerOptions):
    """GradeReranker's options plus the vLLM engine's."""

    tensor_parallel_size: int = opt(1, "vLLM tensor parallelism (GPUs per model copy)")
    data_parallel_size: int = opt(1, "vLLM data parallelism (model copies)")
    batch_invariant: bool = opt(False, "VLLM_BATCH_INVARIANT=1: batch-independent numerics")
    gpu_memory_utilization: float = opt(0.85, "fraction of GPU memory vLLM may take")
    max_model_len: int | None = opt(None, "context length for the engine; null = the model's")

    def __post_init__(self) -> None:
        super().__post_init__()
        check_counts(self, "tensor_parallel_size", "data_parallel_size")
        g = self.gpu_memory_utilization
        if isinstance(g, bool) or not isinstance(g, (int, float)) or not 0 < g <= 1:
            raise ConfigError(f"gpu_memory_utilization must be in (0, 1], got {g!r}")
        if self.adapter_path is not None or self.adapter is not None:
            raise ConfigError(
                "VllmGradeReranker does not take adapter_path or adapter; merge the adapter first"
            )


@RERANKERS.register()
class VllmGradeReranker(GradeReranker):
    """The expected-grade readout served by vLLM (same prompts and skeleton as GradeReranker)."""

    config_cls: ClassVar[type[RerankerOptions]] = VllmGradeOptions

    @classmethod
    def unavailable_reason(cls) -> str | None:
        """Why this reranker cannot run here (no vLLM or no GPU), or None."""
        from presentation_dependence.readout.vllm_backend import vllm_available

        return None if vllm_available() else "needs the 'vllm' extra and a CUDA GPU"

    def _ensure_loaded(self) -> tuple[TransformersBackend, PromptBuilder]:
        if self._backend is None or self._builder is None:
            from presentation_dependence.readout.vllm_backend import VllmBackend

            o = self.options
            assert isinstance(o, VllmGradeOptions)
            self._resolved = resolve_model(o.model_name, o.revision)
            key = (
                self._resolved.path,
                self._resolved.revision,
                o.dtype,
                o.tensor_parallel_size,
                o.data_parallel_size,
                o.batch_invariant,
                o.max_model_len,
            )
            with _LOCK:
                engine = _ENGINES.get(key)
                if engine is None:
                    engine = VllmBackend.load(
                        self._resolved.path,
                        revision=self._resolved.revision
                        if self._resolved.source == "hub"
                        else None,
                        dtype=o.dtype,
                        trust_remote_code=o.trust_remote_code,
                        tensor_parallel_size=o.tensor_parallel_size,
                        data_parallel_size=o.data_parallel_size,
                        batch_invariant=o.batch_invariant,
                        gpu_memory_utilization=float(o.gpu_memory_utilization),
                        max_model_len=o.max_model_len,
                    )
                    _ENGINES[key] = engine
            self._backend = cast("TransformersBackend", engine)  # the same grade_probs contract
            self._builder = PromptBuilder(
                engine.tokenizer,
                get_template(o.template),
                o.grade_labels,
                max_passage_chars=o.max_passage_chars,
                max_prompt_tokens=o.max_prompt_tokens or engine.max_context,
                chat_template_kwargs=self.chat_template_kwargs,
            )
        return self._backend, self._builder

    def describe(self) -> dict[str, Any]:
        info = super().describe()
        backend, _ = self._ensure_loaded()
        info["backend"] = backend.describe()
        return info
