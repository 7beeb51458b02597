"""The expected-grade readout prompt: template text, chat rendering, slot positions, truncation.

A prompt holds a grading instruction, the query and B passages tagged ``[1]..[B]``, rendered
as one user turn through the tokenizer's own chat template (``add_generation_prompt=True``).
After the assistant-turn start comes the *answer skeleton*, one line per passage::

    [1] grade:1
    [2] grade:1
    ...

with the template's fixed *filler* label at every grade slot (teacher forcing). The model is
run once over the whole text; the grade distribution of slot ``i`` is read from the logits at
the token *before* slot ``i``'s grade token. :class:`PromptBuilder` returns the token ids and
the index of every grade token, after checking that each grade label is exactly one token in
the context where it appears. ``docs/SCORING.md`` is the specification; a test keeps the
template text there equal to :data:`PATHC_GRADE_V1_INSTRUCTION`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

from presentation_dependence.errors import ConfigError
from presentation_dependence.registry import did_you_mean

__all__ = [
    "INTERLEAVED_GRADE_V1_INSTRUCTION",
    "PATHC_GRADE_V1_INSTRUCTION",
    "TEMPLATES",
    "BuiltPrompt",
    "GradeLabelTokenizationError",
    "GradeTemplate",
    "PromptBuilder",
    "PromptTooLongError",
    "clean_text",
    "get_template",
]

logger = logging.getLogger(__name__)

# The grading scale and the query, the head of every template's user turn.
GRADE_SCALE = """\
You are a search quality rater. Grade how relevant each passage is to the query, on this scale:
{g3} = perfectly relevant: the passage is dedicated to the query and contains the exact answer.
{g2} = highly relevant: the passage answers the query, but the answer may be unclear or hidden among other information.
{g1} = related: the passage is on the topic of the query but does not answer it.
{g0} = irrelevant: the passage has nothing to do with the query.

Query: {query}
"""
# The user turn of template ``pathc_grade_v1``. Placeholders: {g0}..{g3} (the grade labels),
# {query}, {passages} (the passage lines) and {num} (the number of passages). docs/SCORING.md
# quotes this text verbatim (tests/readout/test_prompt.py checks it).
PATHC_GRADE_V1_INSTRUCTION = (
    GRADE_SCALE
    + """
Passages:
{passages}

Grade each of the {num} passages on its own, in the order given. Answer with exactly one line per passage, in the form "[i] grade:g", where i is the passage number and g is its grade."""
)

# The user turn of template ``interleaved_grade_v1``: the passages are not in the user turn;
# the answer skeleton writes each passage and then its grade slot, so the slot of passage i
# comes right after passage i's text (docs/SCORING.md section 5).
INTERLEAVED_GRADE_V1_INSTRUCTION = (
    GRADE_SCALE
    + """
There are {num} passages. Write each passage on its own line, in the form "[i] passage grade:g", where i is the passage number and g is the grade of that passage alone."""
)


class GradeLabelTokenizationError(ConfigError):
    """A grade label is not exactly one token where the skeleton puts it."""


class PromptTooLongError(ConfigError):
    """The instruction, query and skeleton alone do not fit the token budget."""


@dataclass(frozen=True)
class GradeTemplate:
    """A readout template: the user turn, the passage line and the answer skeleton.

    ``answer_prefix`` is the text of a skeleton line before its grade label (it may hold
    ``{text}``, the passage itself: the *interleaved* layout, where a slot comes right after its
    own passage and the user turn holds no passages), ``line_sep`` the text between skeleton
    lines. ``filler_index`` picks the grade label written at every slot
    of the teacher-forced skeleton (an index into the grade labels, so it follows them).
    """

    template_id: str
    instruction: str
    passage_line: str = "[{slot}] {text}"
    passage_sep: str = "\n"
    answer_prefix: str = "[{slot}] grade:"
    line_sep: str = "\n"
    filler_index: int = 1
    num_grades: int = 4

    def render_user(self, query: str, passages: Sequence[str], labels: Sequence[str]) -> str:
        lines = self.passage_sep.join(
            self.passage_line.format(slot=i + 1, text=p) for i, p in enumerate(passages)
        )
        grade_fields = {f"g{k}": lab for k, lab in enumerate(labels)}
        return self.instruction.format(
            query=query, passages=lines, num=len(passages), **grade_fields
        )

    @property
    def interleaved(self) -> bool:
        """True when each skeleton line carries its passage (``{text}`` in the answer prefix)."""
        return "{text}" in self.answer_prefix

    def render_skeleton(
        self, num: int, filler: str, passages: Sequence[str] = ()
    ) -> tuple[str, list[int]]:
        """The skeleton text and the character offset of every slot's label in it."""
        if self.interleaved and len(passages) != num:
            raise ValueError(
                f"an interleaved skeleton needs the {num} passages, got {len(passages)}"
            )
        parts: list[str] = []
        offsets: list[int] = []
        pos = 0
        for i in range(num):
            text = passages[i] if self.interleaved else ""
            head = (self.line_sep if i else "") + self.answer_prefix.format(slot=i + 1, text=text)
            parts.append(head)
            pos += len(head)
            offsets.append(pos)
            parts.append(filler)
            pos += len(filler)
        return "".join(parts), offsets


TEMPLATES: dict[str, GradeTemplate] = {
    "pathc_grade_v1": GradeTemplate("pathc_grade_v1", PATHC_GRADE_V1_INSTRUCTION),
    "interleaved_grade_v1": GradeTemplate(
        "interleaved_grade_v1",
        INTERLEAVED_GRADE_V1_INSTRUCTION,
        answer_prefix="[{slot}] {text} grade:",
    ),
}


def get_template(template_id: str) -> GradeTemplate:
    try:
        return TEMPLATES[template_id]
    except KeyError:
        known = sorted(TEMPLATES)
        raise ConfigError(
            f"unknown readout template {template_id!r}.{did_you_mean(template_id, known)} "
            f"Known: {', '.join(known)}"
        ) from None


def clean_text(text: str, max_chars: int | None = None) -> str:
    """Collapse every whitespace run to one space, strip, and cut to ``max_chars`` characters."""
    out = " ".join(text.split())
    return out[:max_chars] if max_chars is not None else out


@dataclass(frozen=True)
class BuiltPrompt:
    """One tokenized readout prompt.

    ``grade_positions[i]`` is the index in ``input_ids`` of slot ``i+1``'s (filler) grade token;
    its distribution is read from the logits at ``grade_positions[i] - 1``.
    """

    text: str
    input_ids: tuple[int, ...]
    grade_positions: tuple[int, ...]
    passages: tuple[str, ...]
    token_truncated: int = 0

    @property
    def readout_positions(self) -> tuple[int, ...]:
        return tuple(p - 1 for p in self.grade_positions)

    def __len__(self) -> int:
        return len(self.input_ids)


class PromptBuilder:
    """Builds readout prompts for one tokenizer, template and set of grade labels."""

    def __init__(
        self,
        tokenizer: Any,
        template: GradeTemplate,
        grade_labels: Sequence[str],
        *,
        max_passage_chars: int | None = 1200,
        max_prompt_tokens: int | None = None,
        chat_template_kwargs: Mapping[str, Any] | None = None,
    ) -> None:
        if len(grade_labels) != template.num_grades:
            raise ConfigError(
                f"template {template.template_id!r} has {template.num_grades} grades, "
                f"got {len(grade_labels)} grade_labels {tuple(grade_labels)!r}"
            )
        if getattr(tokenizer, "chat_template", None) is None:
            raise ConfigError(
                f"tokenizer {getattr(tokenizer, 'name_or_path', '?')!r} has no chat template; "
                "the readout renders its prompt through the model's own chat template. "
                "Fix: use an instruct/chat model or set tokenizer.chat_template"
            )
        self.tokenizer = tokenizer
        self.template = template
        self.grade_labels = tuple(grade_labels)
        self.filler = self.grade_labels[template.filler_index]
        self.max_passage_chars = max_passage_chars
        self.max_prompt_tokens = max_prompt_tokens
        self.chat_template_kwargs = dict(chat_template_kwargs or {})
        self._grade_ids: tuple[int, ...] | None = None

    # -- tokenization helpers -------------------------------------------------------------
    def _ids(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def _pieces(self, ids: Sequence[int]) -> list[str]:
        return list(self.tokenizer.convert_ids_to_tokens(list(ids)))

    @property
    def grade_token_ids(self) -> tuple[int, ...]:
        """The token id of every grade label (known after the first :meth:`build`)."""
        if self._grade_ids is None:
            raise RuntimeError("grade_token_ids are known after the first build()")
        return self._grade_ids

    def render(self, query: str, passages: Sequence[str]) -> tuple[str, list[int]]:
        """The full prompt text and the character offset of every grade slot in it."""
        user = self.template.render_user(query, passages, self.grade_labels)
        head = self.tokenizer.apply_chat_template(
            [{"role": "user", "content": user}],
            tokenize=False,
            add_generation_prompt=True,
            **self.chat_template_kwargs,
        )
        if not isinstance(head, str):
            raise TypeError(f"apply_chat_template(tokenize=False) returned {type(head).__name__}")
        skeleton, offsets = self.template.render_skeleton(len(passages), self.filler, passages)
        return head + skeleton, [len(head) + o for o in offsets]

    # -- checks -----------------------------------------------------------------------------
    def check_labels(self, prefix: str) -> tuple[int, ...]:
        """Check every grade label is one token right after ``prefix``; return their ids.

        ``tokenize(prefix + label)`` must equal ``tokenize(prefix)`` plus exactly one token.
        """
        base = self._ids(prefix)
        ids: list[int] = []
        for label in self.grade_labels:
            full = self._ids(prefix + label)
            if len(full) != len(base) + 1 or full[: len(base)] != base:
                k = 0
                while k < min(len(base), len(full)) and base[k] == full[k]:
                    k += 1
                k = max(0, min(k, len(base) - 2))
                raise GradeLabelTokenizationError(
                    f"grade label {label!r} is not a single token in the answer skeleton of "
                    f"template {self.template.template_id!r}: after {prefix[-24:]!r} the "
                    f"tokenizer gives {self._pieces(full[k:])} (ids {full[k:]}) where the "
                    f"prefix alone gives {self._pieces(base[k:])}. The readout needs every "
                    "grade to be exactly one token in context. Fix: choose grade_labels that "
                    "are single tokens for this tokenizer (e.g. '0','1','2','3' with no "
                    "leading space), or a template whose answer line ends in a character that "
                    "does not merge with the label."
                )
            ids.append(full[-1])
        if len(set(ids)) != len(ids):
            raise GradeLabelTokenizationError(
                f"grade labels {self.grade_labels!r} map to repeated token ids {ids}; "
                "every grade needs its own token"
            )
        if self._grade_ids is not None and tuple(ids) != self._grade_ids:
            raise GradeLabelTokenizationError(
                f"grade label token ids changed with the context: {self._grade_ids} then "
                f"{tuple(ids)}"
            )
        return tuple(ids)

    def locate_slots(self, text: str, slot_chars: Sequence[int]) -> tuple[list[int], list[int]]:
        """Tokenize ``text``; return its ids and the token index of each slot's label.

        Uses the fast tokenizer's character offsets; a slow tokenizer is handled by
        tokenizing each prefix. Either way the label must be one whole token.
        """
        n = len(self.filler)
        if getattr(self.tokenizer, "is_fast", False):
            enc = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
            ids = list(enc["input_ids"])
            starts = {(int(s), int(e)): t for t, (s, e) in enumerate(enc["offset_mapping"])}
            positions = []
            for slot, c in enumerate(slot_chars, start=1):
                t = starts.get((c, c + n))
                if t is None:
                    self._slot_error(slot, text, c, enc["offset_mapping"], ids)
                positions.append(t)
        else:
            ids = self._ids(text)
            positions = []
            for slot, c in enumerate(slot_chars, start=1):
                pre = self._ids(text[:c])
                if ids[: len(pre)] != pre or self._ids(text[: c + n]) != ids[: len(pre) + 1]:
                    self._slot_error(slot, text, c, None, ids)
                positions.append(len(pre))
        return ids, positions

    def _slot_error(
        self, slot: int, text: str, c: int, offsets: Sequence[Any] | None, ids: Sequence[int]
    ) -> NoReturn:
        covering = []
        if offsets is not None:
            covering = [t for t, (s, e) in enumerate(offsets) if s < c + len(self.filler) and e > c]
        got = self._pieces([ids[t] for t in covering]) if covering else "(unknown split)"
        raise GradeLabelTokenizationError(
            f"grade label {self.filler!r} at slot [{slot}] is not a token of its own in "
            f"context {text[max(0, c - 16) : c + 4]!r}: it tokenized as {got}. Fix: choose "
            "grade_labels / a template whose labels stay single tokens in context."
        )

    # -- building -----------------------------------------------------------------------------
    def build(self, query: str, passages: Sequence[str]) -> BuiltPrompt:
        """Render, truncate to the token budget, tokenize and locate the grade slots."""
        if not passages:
            raise ValueError("a readout prompt needs at least one passage")
        q = clean_text(query)
        texts = [clean_text(p, self.max_passage_chars) for p in passages]
        text, slot_chars = self.render(q, texts)
        ids = self._ids(text)
        truncated = 0
        budget = self.max_prompt_tokens
        if budget is not None and len(ids) > budget:
            texts, truncated = self._fit(q, texts, budget)
            text, slot_chars = self.render(q, texts)
        grade_ids = self.check_labels(text[: slot_chars[0]])
        ids, positions = self.locate_slots(text, slot_chars)
        filler_id = grade_ids[self.template.filler_index]
        if any(ids[p] != filler_id for p in positions):
            raise GradeLabelTokenizationError(
                f"the filler {self.filler!r} does not tokenize to id {filler_id} at every slot"
            )
        if budget is not None and len(ids) > budget:
            raise PromptTooLongError(f"prompt has {len(ids)} tokens > budget {budget}")
        self._grade_ids = grade_ids
        return BuiltPrompt(
            text=text,
            input_ids=tuple(ids),
            grade_positions=tuple(positions),
            passages=tuple(texts),
            token_truncated=truncated,
        )

    def _cut(self, text: str, max_tokens: int) -> str:
        if max_tokens <= 0:
            return ""
        if getattr(self.tokenizer, "is_fast", False):
            enc = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
            offs = enc["offset_mapping"]
            return text if len(offs) <= max_tokens else text[: int(offs[max_tokens - 1][1])]
        ids = self._ids(text)
        if len(ids) <= max_tokens:
            return text
        return str(self.tokenizer.decode(ids[:max_tokens])).rstrip("\ufffd")

    def _fit(self, query: str, texts: list[str], budget: int) -> tuple[list[str], int]:
        """Cut every passage to one common token cap so that the prompt fits ``budget``.

        The cap depends on the query, the number of passages and the budget only, never on
        the order of the passages or on the other passages' texts.
        """
        empty_text, _ = self.render(query, [""] * len(texts))
        overhead = len(self._ids(empty_text))
        if overhead >= budget:
            raise PromptTooLongError(
                f"the instruction, query and skeleton for {len(texts)} passages need "
                f"{overhead} tokens, more than the budget of {budget}. Fix: lower chunk_size, "
                "shorten the query, or raise max_prompt_tokens"
            )
        cap = (budget - overhead) // len(texts)
        for _ in range(64):
            cut = [self._cut(t, cap) for t in texts]
            n = len(self._ids(self.render(query, cut)[0]))
            if n <= budget:
                truncated = sum(c != t for c, t in zip(cut, texts, strict=True))
                logger.debug("token-truncated %d passages to %d tokens each", truncated, cap)
                return cut, truncated
            cap -= max(1, (n - budget + len(texts) - 1) // len(texts))
            if cap <= 0:
                break
        raise PromptTooLongError(f"could not fit {len(texts)} passages into {budget} tokens")
