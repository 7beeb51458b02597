"""Pointwise and remote-code cross-encoders: MxbaiPointwise and JinaListwiseReranker.

``MxbaiPointwise`` is the yes/no logit form mxbai-rerank-v2 uses: one prompt per candidate
(``query: ...``, ``document: ...`` and a binary relevance instruction, rendered through the
model's chat template with the generation prompt), and the logits of the labels ``"1"`` (yes)
and ``"0"`` (no) at the last prompt token. The raw mxbai score is ``d = logit(yes) - logit(no)``
(unbounded); we report ``3 * sigmoid(d)``, which is ``3 * P(yes)`` with P renormalised over the
two labels, a monotone map onto the 0..3 grade range (``d`` is kept per candidate). It runs on
the transformers backend with any causal chat model, the embedded one included, and is
order-free by construction (paradigm POINTWISE).

``JinaListwiseReranker`` runs jina-reranker-v3 through its own hub code (``model.rerank``). It
refuses to load unless the config sets ``trust_remote_code: true``; it cannot be tested offline
beyond that refusal.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from typing import TYPE_CHECKING, Any, ClassVar

from presentation_dependence.errors import ConfigError
from presentation_dependence.fields import check_counts, checked_options, opt
from presentation_dependence.models.embedded import resolve_model
from presentation_dependence.readout.options import BatchedModelOptions, ModelOptions
from presentation_dependence.readout.prompt import BuiltPrompt, clean_text
from presentation_dependence.records import Candidate, Cost, Query, RankResult
from presentation_dependence.rerankers.base import RERANKERS, Paradigm, RerankerOptions
from presentation_dependence.rerankers.grade import GradeRerankerOptions, _load_backend

if TYPE_CHECKING:
    from presentation_dependence.readout.backend import TransformersBackend

__all__ = [
    "MXBAI_INSTRUCTION",
    "JinaListwiseOptions",
    "JinaListwiseReranker",
    "MxbaiPointwise",
    "MxbaiPointwiseOptions",
]

logger = logging.getLogger(__name__)

MXBAI_INSTRUCTION = (
    "You are a search relevance expert who evaluates how well documents match search queries. "
    "For each query-document pair, carefully analyze the semantic relationship between them, "
    "then provide your binary relevance judgment (0 for not relevant, 1 for relevant).\n"
    "Relevance:"
)


def load_chat_model(o: ModelOptions) -> tuple[TransformersBackend, str | None]:
    """The backend of options ``o``, loaded as GradeReranker loads its model, and the resolved
    revision."""
    resolved = resolve_model(o.model_name, o.revision)
    grade = GradeRerankerOptions(**{f.name: getattr(o, f.name) for f in fields(ModelOptions)})
    return _load_backend(resolved, grade), resolved.revision


@dataclass(frozen=True)
class MxbaiPointwiseOptions(BatchedModelOptions, RerankerOptions):
    """Options of MxbaiPointwise (yes/no logit pointwise scoring)."""

    model_name: str = opt("mixedbread-ai/mxbai-rerank-base-v2", "any causal chat model")
    max_passage_chars: int | None = opt(1200, "cut each passage to this many characters")
    yes_label: str = opt("1", "the 'relevant' answer token")
    no_label: str = opt("0", "the 'not relevant' answer token")

    def __post_init__(self) -> None:
        super().__post_init__()
        check_counts(self, "max_passage_chars", nullable=True)
        if (
            not isinstance(self.yes_label, str)
            or not isinstance(self.no_label, str)
            or not self.yes_label
            or self.yes_label == self.no_label
        ):
            raise ConfigError("yes_label and no_label must be two distinct non-empty strings")


@RERANKERS.register()
class MxbaiPointwise:
    """mxbai-rerank-v2's yes/no logit form, one candidate per prompt; score 3·sigmoid(d)."""

    paradigm: ClassVar[Paradigm] = Paradigm.POINTWISE
    config_cls: ClassVar[type[RerankerOptions]] = MxbaiPointwiseOptions

    def __init__(self, options: RerankerOptions | None = None) -> None:
        self.options = checked_options(self, options, MxbaiPointwiseOptions)
        self._backend: TransformersBackend | None = None
        self._label_ids: tuple[int, int] | None = None
        self._revision: str | None = None

    def _ensure_loaded(self) -> tuple[TransformersBackend, tuple[int, int]]:
        if self._backend is None or self._label_ids is None:
            o = self.options
            backend, self._revision = load_chat_model(o)
            ids = []
            for label in (o.no_label, o.yes_label):
                toks = backend.tokenizer(label, add_special_tokens=False)["input_ids"]
                if len(toks) != 1:
                    raise ConfigError(
                        f"label {label!r} is {len(toks)} tokens for this tokenizer; the yes/no "
                        "form needs one token each. Fix: set yes_label / no_label"
                    )
                ids.append(int(toks[0]))
            self._backend, self._label_ids = backend, (ids[0], ids[1])
        return self._backend, self._label_ids

    def build_prompt(self, query: str, passage: str) -> BuiltPrompt:
        backend, _ = self._ensure_loaded()
        tok = backend.tokenizer
        doc = clean_text(passage, self.options.max_passage_chars)
        user = f"query: {clean_text(query)}\ndocument: {doc}\n{MXBAI_INSTRUCTION}"
        text = str(
            tok.apply_chat_template(
                [{"role": "user", "content": user}], tokenize=False, add_generation_prompt=True
            )
        )
        ids = tuple(int(i) for i in tok(text, add_special_tokens=False)["input_ids"])
        # read at the last prompt token: "grade position" len(ids) -> readout position len - 1
        return BuiltPrompt(text=text, input_ids=ids, grade_positions=(len(ids),), passages=(doc,))

    def rank(self, query: Query, candidates: Sequence[Candidate]) -> RankResult:
        o = self.options
        if not candidates:
            return RankResult.from_scores(query, candidates, [], cost=Cost())
        backend, label_ids = self._ensure_loaded()
        prompts = [self.build_prompt(query.text, c.text) for c in candidates]
        probs, stats = backend.grade_probs(
            prompts,
            label_ids,
            batch_size=o.batch_size,
            one_at_a_time=o.one_at_a_time,
            num_threads=o.num_threads,
        )
        scores, item_details = [], []
        for p in probs:
            p_no, p_yes = float(p[0, 0]), float(p[0, 1])
            d = math.log(max(p_yes, 1e-300)) - math.log(max(p_no, 1e-300))
            scores.append(3.0 * p_yes)
            item_details.append({"p_yes": p_yes, "logit_diff": d})
        cost = Cost(stats.forward_passes, stats.prompt_tokens)
        return RankResult.from_scores(
            query, candidates, scores, item_details=item_details, cost=cost
        )

    def describe(self) -> dict[str, Any]:
        backend, label_ids = self._ensure_loaded()
        return {
            "reranker_class": type(self).__name__,
            "paradigm": self.paradigm.value,
            "model_name": self.options.model_name,
            "revision": self._revision,
            **{k: v for k, v in backend.describe().items() if k != "revision"},
            "label_token_ids": list(label_ids),
            "score": "3*sigmoid(logit(yes) - logit(no))",
            "options": asdict(self.options),
        }


@dataclass(frozen=True)
class JinaListwiseOptions(ModelOptions, RerankerOptions):
    """Options of JinaListwiseReranker (jina-reranker-v3 through its own hub code)."""

    model_name: str = opt("jinaai/jina-reranker-v3", "a jina-reranker-v3 checkpoint")
    revision: str | None = opt(None, "hub revision; pin it: the model's code runs locally")
    trust_remote_code: bool = opt(False, "must be true: the model's own code scores")
    max_docs_per_call: int = opt(64, "documents per rerank() call (jina v3 takes up to 64)")
    max_passage_chars: int | None = opt(1200, "cut each passage to this many characters")

    def __post_init__(self) -> None:
        super().__post_init__()
        check_counts(self, "max_docs_per_call")
        check_counts(self, "max_passage_chars", nullable=True)


@RERANKERS.register()
class JinaListwiseReranker:
    """jina-reranker-v3: up to 64 documents in one causal context, each scored at its last token.

    Scores are the model's relevance scores (cosine-like, -1..1) mapped to ``1.5 * (s + 1)``;
    chunks of ``max_docs_per_call`` are merged as if absolute (as rank_llm does).
    """

    paradigm: ClassVar[Paradigm] = Paradigm.LISTWISE_READOUT
    config_cls: ClassVar[type[RerankerOptions]] = JinaListwiseOptions
    requires_remote_code: ClassVar[bool] = True

    @classmethod
    def unavailable_reason(cls) -> str | None:
        """Why the offline contract suite cannot run it: it needs the model's hub code."""
        return "runs jina-reranker-v3's own hub code (trust_remote_code); not testable offline"

    def __init__(self, options: RerankerOptions | None = None) -> None:
        self.options = checked_options(self, options, JinaListwiseOptions)
        self._model: Any = None

    def _ensure_loaded(self) -> Any:
        o = self.options
        if not o.trust_remote_code:
            raise ConfigError(
                f"JinaListwiseReranker runs {o.model_name!r}'s own Python code from the hub. "
                "Fix: set trust_remote_code: true in the reranker block (and pin revision) "
                "if you trust that code"
            )
        if self._model is None:
            from transformers import AutoModel

            from presentation_dependence.readout.backend import resolve_device, resolve_dtype

            dev = resolve_device(o.device)
            model: Any = AutoModel.from_pretrained(
                o.model_name,
                revision=o.revision,
                dtype=resolve_dtype(o.dtype, dev),
                trust_remote_code=True,
            )
            model.to(dev)
            model.eval()
            if not callable(getattr(model, "rerank", None)):
                raise ConfigError(f"{o.model_name!r} has no rerank() method: not a jina v3 model")
            self._model = model
        return self._model

    def rank(self, query: Query, candidates: Sequence[Candidate]) -> RankResult:
        if not candidates:
            return RankResult.from_scores(query, candidates, [])
        model = self._ensure_loaded()
        o = self.options
        docs = [clean_text(c.text, o.max_passage_chars) for c in candidates]
        scores = [0.0] * len(docs)
        calls = 0
        for start in range(0, len(docs), o.max_docs_per_call):
            chunk = docs[start : start + o.max_docs_per_call]
            for row in model.rerank(clean_text(query.text), chunk):
                s = float(row["relevance_score"])
                scores[start + int(row["index"])] = min(3.0, max(0.0, 1.5 * (s + 1.0)))
            calls += 1
        return RankResult.from_scores(query, candidates, scores, details={"rerank_calls": calls})

    def describe(self) -> dict[str, Any]:
        return {
            "reranker_class": type(self).__name__,
            "paradigm": self.paradigm.value,
            "model_name": self.options.model_name,
            "revision": self.options.revision,
            "trust_remote_code": self.options.trust_remote_code,
            "options": asdict(self.options),
        }
