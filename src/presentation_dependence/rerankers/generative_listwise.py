"""GenerativeListwiseReranker: the model writes a permutation ``[3] > [1] > ...`` (RankGPT style).

A sliding window (``window_size`` 20, ``stride`` 10) moves from the back of the list to the
front (RankGPT, Sun et al. 2023; RankZephyr): each window's passages are shown as ``[1]..[w]``,
the model answers a permutation by greedy generation, and the window's slice of the running
order is rewritten. Every answer goes through :func:`analyse_response` (ok / wrong_format /
repetition / missing_ids, as rank_llm's response analyser counts them) and a deterministic
repair: ids outside ``1..w`` are dropped, repeats keep their first occurrence, and missing ids
are appended in their current order. The final order gives scores ``3 (n-1-p)/(n-1)`` at
position ``p``, so :class:`RankResult` keeps it. Works with any chat model on the transformers
backend, the embedded one included. Generative: the answer depends on the presentation order.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from presentation_dependence.errors import ConfigError
from presentation_dependence.fields import check_counts, checked_options, opt
from presentation_dependence.readout.options import ThreadedModelOptions
from presentation_dependence.readout.prompt import clean_text
from presentation_dependence.records import Candidate, Cost, Query, RankResult
from presentation_dependence.rerankers.base import RERANKERS, Paradigm, RerankerOptions
from presentation_dependence.rerankers.cross_encoder import load_chat_model

if TYPE_CHECKING:
    from presentation_dependence.readout.backend import TransformersBackend

__all__ = [
    "GenerativeListwiseOptions",
    "GenerativeListwiseReranker",
    "ResponseAnalysis",
    "analyse_response",
    "render_rankgpt_prompt",
    "sliding_windows",
]

logger = logging.getLogger(__name__)

RANKGPT_PROMPT = """\
I will provide you with {num} passages, each indicated by a numerical identifier []. Rank the passages based on their relevance to the search query: {query}.

{passages}

Search Query: {query}.
Rank the {num} passages above based on their relevance to the search query. All the passages should be included and listed using identifiers, in descending order of relevance. The output format should be [] > [], e.g., [2] > [1]. Only respond with the ranking results, do not say any word or explain."""

_ID = re.compile(r"\[(\d+)\]")
_STRICT = re.compile(r"^\s*\[\d+\](\s*>\s*\[\d+\])*\s*$")


@dataclass(frozen=True)
class ResponseAnalysis:
    """What a permutation answer held and how it was repaired.

    ``status`` is the first problem of wrong_format (not ``[a] > [b] > ...``, or an id outside
    1..w), repetition, missing_ids; ``ok`` when none. ``order`` is the repaired permutation of
    ``0..w-1`` (window positions, best first).
    """

    status: str
    order: tuple[int, ...]
    missing: tuple[int, ...] = ()
    repeated: tuple[int, ...] = ()
    out_of_range: tuple[int, ...] = ()


def analyse_response(text: str, window: int) -> ResponseAnalysis:
    """Parse a ``[3] > [1] > ...`` answer for a window of ``window`` passages and repair it."""
    ids = [int(m) for m in _ID.findall(text)]
    seen: list[int] = []
    repeated: list[int] = []
    out: list[int] = []
    for i in ids:
        if not 1 <= i <= window:
            out.append(i)
        elif i in seen:
            repeated.append(i)
        else:
            seen.append(i)
    missing = [i for i in range(1, window + 1) if i not in seen]
    order = tuple(i - 1 for i in seen) + tuple(i - 1 for i in missing)
    if not ids or out or not _STRICT.match(text):
        status = "wrong_format"
    elif repeated:
        status = "repetition"
    elif missing:
        status = "missing_ids"
    else:
        status = "ok"
    return ResponseAnalysis(status, order, tuple(missing), tuple(repeated), tuple(out))


def sliding_windows(n: int, window: int, stride: int) -> list[tuple[int, int]]:
    """``(start, end)`` slices from the back of the list to the front; the last starts at 0."""
    out: list[tuple[int, int]] = []
    end = n
    for _ in range(n + 1):  # bounded: every step moves end down by stride >= 1
        start = max(0, end - window)
        out.append((start, end))
        if start == 0:
            break
        end -= stride
    return out


def render_rankgpt_prompt(query: str, passages: Sequence[str]) -> str:
    lines = "\n".join(f"[{i}] {p}" for i, p in enumerate(passages, start=1))
    return RANKGPT_PROMPT.format(num=len(passages), query=query, passages=lines)


@dataclass(frozen=True)
class GenerativeListwiseOptions(ThreadedModelOptions, RerankerOptions):
    """Options of GenerativeListwiseReranker (RankGPT-style sliding-window permutation)."""

    window_size: int = opt(20, "passages per window")
    stride: int = opt(10, "window step, back to front")
    max_passage_chars: int | None = opt(300, "cut each passage to this many characters")
    max_new_tokens: int | None = opt(None, "answer budget; null = 5 per passage + 8")

    def __post_init__(self) -> None:
        super().__post_init__()
        check_counts(self, "window_size", "stride")
        if self.stride > self.window_size:
            raise ConfigError(
                f"stride {self.stride} > window_size {self.window_size} would skip passages"
            )
        check_counts(self, "max_passage_chars", "max_new_tokens", nullable=True)


@RERANKERS.register()
class GenerativeListwiseReranker:
    """RankGPT / RankZephyr-style generative listwise reranking with a sliding window."""

    paradigm: ClassVar[Paradigm] = Paradigm.GENERATIVE_LISTWISE
    config_cls: ClassVar[type[RerankerOptions]] = GenerativeListwiseOptions

    def __init__(self, options: RerankerOptions | None = None) -> None:
        self.options = checked_options(self, options, GenerativeListwiseOptions)
        self._backend: TransformersBackend | None = None
        self._revision: str | None = None

    def _ensure_loaded(self) -> TransformersBackend:
        if self._backend is None:
            self._backend, self._revision = load_chat_model(self.options)
        return self._backend

    def generate(self, query: str, passages: Sequence[str]) -> tuple[str, int, int]:
        """Greedy answer for one window: (text, prompt tokens, generated tokens)."""
        import torch

        backend = self._ensure_loaded()
        tok = backend.tokenizer
        text = tok.apply_chat_template(
            [{"role": "user", "content": render_rankgpt_prompt(query, passages)}],
            tokenize=False,
            add_generation_prompt=True,
        )
        ids: Any = tok(str(text), add_special_tokens=False, return_tensors="pt")["input_ids"]
        budget = self.options.max_new_tokens or 5 * len(passages) + 8
        if self.options.num_threads is not None:
            torch.set_num_threads(self.options.num_threads)
        with torch.inference_mode():
            out = backend.model.generate(
                ids.to(backend.device),
                attention_mask=torch.ones_like(ids).to(backend.device),
                max_new_tokens=budget,
                do_sample=False,
                pad_token_id=backend.pad_token_id,
            )
        new = out[0, ids.shape[1] :]
        return str(tok.decode(new, skip_special_tokens=True)), int(ids.shape[1]), len(new)

    def rank(self, query: Query, candidates: Sequence[Candidate]) -> RankResult:
        o = self.options
        n = len(candidates)
        details: dict[str, Any] = {"windows": 0, "generated_tokens": 0}
        prompt_tokens = 0
        if n == 0:
            return RankResult.from_scores(query, candidates, [], details=details, cost=Cost())
        texts = [clean_text(c.text, o.max_passage_chars) for c in candidates]
        q = clean_text(query.text)
        order = list(range(n))  # input positions, best first
        statuses: dict[str, int] = {}
        analyses = []
        t0 = time.perf_counter()
        for start, end in sliding_windows(n, o.window_size, o.stride):
            window = order[start:end]
            answer, p_tok, g_tok = self.generate(q, [texts[i] for i in window])
            a = analyse_response(answer, len(window))
            order[start:end] = [window[j] for j in a.order]
            statuses[a.status] = statuses.get(a.status, 0) + 1
            analyses.append({"start": start, "end": end, "status": a.status, "answer": answer})
            details["windows"] += 1
            prompt_tokens += p_tok
            details["generated_tokens"] += g_tok
        details.update(statuses=statuses, window_answers=analyses)
        logger.debug(
            "query %s: %d windows in %.2f s",
            query.qid,
            details["windows"],
            time.perf_counter() - t0,
        )
        scores = [0.0] * n
        for p, i in enumerate(order):
            scores[i] = 3.0 * (n - 1 - p) / max(n - 1, 1)
        item_details = [{"position": order.index(i)} for i in range(n)]
        return RankResult.from_scores(
            query,
            candidates,
            scores,
            item_details=item_details,
            details=details,
            cost=Cost(forward_passes=details["windows"], prompt_tokens=prompt_tokens),
        )

    def describe(self) -> dict[str, Any]:
        backend = self._ensure_loaded()
        return {
            "reranker_class": type(self).__name__,
            "paradigm": self.paradigm.value,
            "model_name": self.options.model_name,
            "revision": self._revision,
            **{k: v for k, v in backend.describe().items() if k != "revision"},
            "prompt": "rankgpt_v1",
            "options": asdict(self.options),
        }
