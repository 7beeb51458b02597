"""Expected-grade rerankers: read P(grade) at fixed answer slots, score E[g] (template pathc_grade_v1).

A top-k list is scored in ceil(k/B) chunks of ``chunk_size`` B candidates, in the order the
candidates are received (the first-stage order unless a caller permutes them on purpose, as
the presentation-order experiments do); the last chunk may be shorter. Each chunk is one
prompt; ``batch_size`` prompts share a forward pass. A candidate's score is its expected grade
E[g] = sum_g g * P(g) on the absolute 0..3 scale, so chunks merge by score through
:meth:`RankResult.from_scores` (ties -> first-stage rank, then input position). Nothing is
generated, so nothing can fail to parse. ``docs/SCORING.md`` is the specification.

The model loads on the first :meth:`GradeReranker.rank`, so constructing a reranker is cheap;
loaded models are shared per (path, revision, dtype, device, trust_remote_code, adapter) in this
module. ``adapter_path`` adds a trained LoRA adapter (peft, the ``train`` extra), unmerged, on a
copy of the base model of its own (``readout/adapter.py``, ``docs/TRAINING.md``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from presentation_dependence.fields import checked_options
from presentation_dependence.models.embedded import ResolvedModel, resolve_model
from presentation_dependence.readout.adapter import adapter_sha256, attach_adapter
from presentation_dependence.readout.prompt import BuiltPrompt, PromptBuilder, get_template
from presentation_dependence.readout.speed import (
    resolve_compile,
)
from presentation_dependence.readout.students import verify_student
from presentation_dependence.records import Candidate, Cost, Query, RankResult
from presentation_dependence.rerankers.base import RERANKERS, Paradigm, RerankerOptions
from presentation_dependence.rerankers.grade_options import (
    Gemma4GradeOptions,
    GradeRerankerOptions,
    Granite41GradeOptions,
    PointwiseGradeOptions,
    Qwen3InstructGradeOptions,
)

if TYPE_CHECKING:
    from presentation_dependence.readout.backend import TransformersBackend

__all__ = [
    "Gemma4GradeOptions",
    "Gemma4GradeReranker",
    "GradeReranker",
    "GradeRerankerOptions",
    "Granite41GradeOptions",
    "Granite41GradeReranker",
    "PointwiseGradeOptions",
    "PointwiseGradeReranker",
    "Qwen3InstructGradeOptions",
    "Qwen3InstructGradeReranker",
    "clear_model_cache",
    "readout_result",
]

logger = logging.getLogger(__name__)

# Loaded models, shared by every reranker in the process.
_BACKENDS: dict[
    tuple[str, str | None, str, str, bool, str | None, str | None, str], TransformersBackend
] = {}
_LOCK = threading.Lock()


def clear_model_cache() -> None:
    """Forget every loaded model (tests, or to free memory)."""
    with _LOCK:
        _BACKENDS.clear()


def _load_backend(resolved: ResolvedModel, opts: GradeRerankerOptions) -> TransformersBackend:
    from presentation_dependence.readout.backend import (
        TransformersBackend,
        dtype_name,
        resolve_device,
        resolve_dtype,
    )

    device = resolve_device(opts.device)
    dtype = dtype_name(resolve_dtype(opts.dtype, device))
    adapter = adapter_sha = None
    folder = opts.adapter_folder()
    if folder is not None:
        adapter = str(folder.resolve())
        adapter_sha = adapter_sha256(adapter)
        if opts.adapter is not None:
            verify_student(folder).check_base(resolved.fingerprint())
    key = (
        resolved.path,
        resolved.revision,
        dtype,
        str(device),
        opts.trust_remote_code,
        adapter,
        adapter_sha,
        opts.attn_implementation,
    )
    with _LOCK:
        backend = _BACKENDS.get(key)
        if backend is None:
            # An embedded model's revision names the GGUF it came from; the converted
            # folder itself is loaded as a local path.
            hub_revision = resolved.revision if resolved.source == "hub" else None
            backend = TransformersBackend.load(
                resolved.path,
                revision=hub_revision,
                dtype=dtype,
                device=str(device),
                trust_remote_code=opts.trust_remote_code,
                attn_implementation=opts.attn_implementation,
            )
            backend.revision = resolved.revision
            if adapter is not None:  # this backend's model is its own copy: wrap it
                backend = attach_adapter(backend, adapter)
            _BACKENDS[key] = backend
        return backend


def readout_result(
    query: Query,
    candidates: Sequence[Candidate],
    groups: Sequence[Sequence[int]],
    probs: Sequence[np.ndarray],
    num_grades: int,
    *,
    details: Mapping[str, Any],
    cost: Cost,
    item_details: Sequence[Mapping[str, Any]] | None = None,
) -> RankResult:
    """The result of a chunked readout: chunk c shows ``candidates[groups[c][s - 1]]`` at slot s
    and ``probs[c]`` holds P(g) per slot; each candidate scores E[g] and keeps its slot, chunk
    and grade distribution."""
    n = len(candidates)
    values = np.arange(num_grades, dtype=np.float64)
    scores = np.zeros(n, dtype=np.float64)
    grade_probs: list[tuple[float, ...]] = [()] * n
    slots, chunks = [0] * n, [0] * n
    for c_idx, (group, p) in enumerate(zip(groups, probs, strict=True)):
        if p.shape != (len(group), num_grades):
            raise RuntimeError(f"backend returned P(g) of shape {p.shape} for chunk {c_idx}")
        for slot, (i, row) in enumerate(zip(group, p, strict=True), start=1):
            scores[i] = float(row @ values)
            grade_probs[i] = tuple(float(x) for x in row)
            slots[i], chunks[i] = slot, c_idx
    return RankResult.from_scores(
        query,
        candidates,
        scores,
        item_details=item_details,
        details=details,
        slots=slots,
        chunks=chunks,
        grade_probs=grade_probs,
        cost=cost,
    )


@RERANKERS.register()
class GradeReranker:
    """Listwise expected-grade readout: B candidates per prompt, P(g) read at fixed slots."""

    paradigm: ClassVar[Paradigm] = Paradigm.LISTWISE_READOUT
    config_cls: ClassVar[type[RerankerOptions]] = GradeRerankerOptions
    chat_template_kwargs: ClassVar[Mapping[str, Any]] = {}

    def __init__(self, options: RerankerOptions | None = None) -> None:
        self.options = checked_options(self, options, GradeRerankerOptions)
        self._resolved: ResolvedModel | None = None
        self._backend: TransformersBackend | None = None
        self._builder: PromptBuilder | None = None

    # -- loading ---------------------------------------------------------------------------
    def _ensure_loaded(self) -> tuple[TransformersBackend, PromptBuilder]:
        if self._backend is None or self._builder is None:
            opts = self.options
            self._resolved = resolve_model(opts.model_name, opts.revision)
            self._backend = _load_backend(self._resolved, opts)
            budget = opts.max_prompt_tokens or self._backend.max_context
            self._builder = PromptBuilder(
                self._backend.tokenizer,
                get_template(opts.template),
                opts.grade_labels,
                max_passage_chars=opts.max_passage_chars,
                max_prompt_tokens=budget,
                chat_template_kwargs=self.chat_template_kwargs,
            )
        return self._backend, self._builder

    def _compiled(self, backend: TransformersBackend) -> bool:
        """Whether forward passes run the compiled layers (``compile``, readout/speed.py)."""
        return resolve_compile(self.options.compile, backend.device, backend.dtype)

    @property
    def batch_mode(self) -> str:
        return "one_at_a_time" if self.options.one_at_a_time else "batched"

    # -- scoring ---------------------------------------------------------------------------
    def _chunk_indices(self, n: int) -> list[list[int]]:
        """The input positions each chunk holds, in slot order (``placement``, docs/SCORING.md).

        sequential: chunk c holds positions [cB, (c+1)B). round_robin: with C = ceil(n/B)
        chunks, position i goes to chunk i mod C (slot i // C + 1), so every chunk mixes
        first-stage ranks; chunk sizes differ by at most one and never exceed B.
        """
        b = self.options.chunk_size
        if self.options.placement == "round_robin":
            c = -(-n // b)
            return [list(range(k, n, c)) for k in range(c)]
        return [list(range(i, min(i + b, n))) for i in range(0, n, b)]

    def _details(self) -> dict[str, Any]:
        template_id = get_template(self.options.template).template_id
        return {"template": template_id, "batch_mode": self.batch_mode}

    def _prompts(
        self, query: Query, candidates: Sequence[Candidate]
    ) -> tuple[list[list[int]], list[BuiltPrompt]]:
        """The chunks of ``candidates`` (input positions per prompt) and their prompts."""
        _, builder = self._ensure_loaded()
        groups = self._chunk_indices(len(candidates))
        prompts = [builder.build(query.text, [candidates[i].text for i in g]) for g in groups]
        return groups, prompts

    def _result(
        self,
        query: Query,
        candidates: Sequence[Candidate],
        groups: Sequence[Sequence[int]],
        prompts: Sequence[BuiltPrompt],
        probs: Sequence[np.ndarray],
        cost: Cost,
        **more: Any,
    ) -> RankResult:
        template = get_template(self.options.template)
        details = {
            **self._details(),
            "chunks": len(groups),
            "token_truncated_passages": sum(pr.token_truncated for pr in prompts),
            **more,
        }
        return readout_result(
            query, candidates, groups, probs, template.num_grades, details=details, cost=cost
        )

    def rank(self, query: Query, candidates: Sequence[Candidate]) -> RankResult:
        opts = self.options
        if not candidates:
            return RankResult.from_scores(
                query, candidates, [], details=self._details(), cost=Cost()
            )
        backend, builder = self._ensure_loaded()
        groups, prompts = self._prompts(query, candidates)
        probs, stats = backend.grade_probs(
            prompts,
            builder.grade_token_ids,
            batch_size=opts.batch_size,
            one_at_a_time=opts.one_at_a_time,
            num_threads=opts.num_threads,
            compile=self._compiled(backend),
        )
        logger.debug(
            "query %s: %d candidates, %d chunks, %d passes, %d tokens, %.2f s",
            query.qid,
            len(candidates),
            len(groups),
            stats.forward_passes,
            stats.prompt_tokens,
            stats.seconds,
        )
        cost = Cost(stats.forward_passes, stats.prompt_tokens)
        return self._result(query, candidates, groups, prompts, probs, cost)

    def rank_batch(self, query: Query, lists: Sequence[Sequence[Candidate]]) -> list[RankResult]:
        """:meth:`rank` of each list (the presentations of one query). With
        ``presentation_batch`` > 1, prompts of equal token length share a forward pass, unpadded
        (``TransformersBackend.grade_probs_equal_lengths``); a shared pass is counted in the
        cost of the presentation whose prompt opened it, its tokens where they were read."""
        opts = self.options
        if opts.presentation_batch <= 1 or not all(lists):
            return [self.rank(query, c) for c in lists]
        backend, builder = self._ensure_loaded()
        plans = [self._prompts(query, c) for c in lists]
        flat = [pr for _, prompts in plans for pr in prompts]
        probs, stats = backend.grade_probs_equal_lengths(
            flat,
            builder.grade_token_ids,
            max_batch=opts.presentation_batch,
            num_threads=opts.num_threads,
            compile=self._compiled(backend),
        )
        out, at = [], 0
        for cands, (groups, prompts) in zip(lists, plans, strict=True):
            k = len(prompts)
            passes = sum(st.forward_passes for st in stats[at : at + k])
            cost = Cost(passes, sum(len(pr.input_ids) for pr in prompts))
            out.append(
                self._result(
                    query,
                    cands,
                    groups,
                    prompts,
                    probs[at : at + k],
                    cost,
                    presentation_batch=opts.presentation_batch,
                )
            )
            at += k
        return out

    def describe(self) -> dict[str, Any]:
        """Provenance: loads the model (once) so the resolved path and revision are exact."""
        backend, builder = self._ensure_loaded()
        assert self._resolved is not None
        info = backend.describe()
        adapter: dict[str, Any] = {}
        folder = self.options.adapter_folder()
        if folder is not None:
            adapter = {
                "adapter_path": str(folder.resolve()),
                "adapter_sha256": adapter_sha256(folder),
                "adapter_merged": False,
            }
            if self.options.adapter is not None:
                adapter["student"] = self.options.adapter
        return {
            "reranker_class": type(self).__name__,
            "paradigm": self.paradigm.value,
            "model_name": self.options.model_name,
            "resolved_path": self._resolved.path,
            "model_source": self._resolved.source,
            "revision": self._resolved.revision,
            "dtype": info["dtype"],
            "device": info["device"],
            "accelerator": info.get("accelerator"),
            "batch_mode": self.batch_mode,
            "template": self.options.template,
            "filler": builder.filler,
            "max_prompt_tokens": builder.max_prompt_tokens,
            "chat_template_kwargs": dict(self.chat_template_kwargs),
            "model_class": info["model_class"],
            "logits_to_keep": info["logits_to_keep"],
            "compiled": self._compiled(backend),
            "torch": info["torch"],
            "transformers": info["transformers"],
            **adapter,
            "options": {
                k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(self.options).items()
            },
        }


@RERANKERS.register()
class Qwen3InstructGradeReranker(GradeReranker):
    """The readout on Qwen3 instruct models, rendered with ``enable_thinking=False``."""

    config_cls: ClassVar[type[RerankerOptions]] = Qwen3InstructGradeOptions
    chat_template_kwargs: ClassVar[Mapping[str, Any]] = {"enable_thinking": False}


@RERANKERS.register()
class Gemma4GradeReranker(GradeReranker):
    """The readout on Gemma 4 instruction-tuned models (thinking off where the template asks)."""

    config_cls: ClassVar[type[RerankerOptions]] = Gemma4GradeOptions
    chat_template_kwargs: ClassVar[Mapping[str, Any]] = {"enable_thinking": False}


@RERANKERS.register()
class Granite41GradeReranker(GradeReranker):
    """The readout on IBM Granite 4.1 instruct models."""

    config_cls: ClassVar[type[RerankerOptions]] = Granite41GradeOptions


@RERANKERS.register()
class PointwiseGradeReranker(GradeReranker):
    """The same skeleton with one candidate per prompt: order-free by construction.

    With ``batch_size`` 1 (the default) or ``one_at_a_time`` a candidate's score depends on the
    query and its own text only, bit for bit.
    """

    paradigm: ClassVar[Paradigm] = Paradigm.POINTWISE
    config_cls: ClassVar[type[RerankerOptions]] = PointwiseGradeOptions
