"""The generative N-way judge: the model reads a question and N answers, reasons, and names the
best with ``[[A]]`` .. ``[[X]]`` (any N >= 2). Greedy decoding (temperature 0) through
transformers, on any chat model, the embedded one included.

Template ``judge_nway_v1`` adapts the MT-Bench "pair-v2" judge prompt (FastChat, Apache-2.0)
that RewardBench 2 extends to four assistants, generalised to N letters. The whole instruction
is one user turn rendered with the model's own chat template. The *prompt version* is
``judge_nway_v1:<first 12 hex of sha256(template text)>``: editing the text changes it, and with
it every cache key. Verdicts go through :func:`~presentation_dependence.judge.parser.parse_verdict`
(strict by default).

Template ``judge_nway_verdict_v1`` asks for the verdict first and works the format once (for
small models, docs/JUDGE.md). ``answer_prefix`` (default none) prefills the start of the
response, e.g. ``Verdict: [[``: the model generates on from there, and the parsed judgement is
prefix + generated text; the prompt version then gains ``+prefix:<sha256(prefix)[:8]>``.
"""

from __future__ import annotations

import hashlib
import logging
from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from presentation_dependence.errors import ConfigError
from presentation_dependence.fields import check_counts, checked_options, opt
from presentation_dependence.judge.items.records import JudgeRecord, JudgeRequest, slot_letter
from presentation_dependence.judge.judges.base import (
    JUDGES,
    JudgeIdentity,
    JudgeOptions,
    describe_judge,
)
from presentation_dependence.judge.judges.generation import (
    Generation,
    TransformersGenerator,
    encode_chat,
    load_generator,
)
from presentation_dependence.judge.parser import PARSER_RULES, parser_version, verdict_record
from presentation_dependence.readout.options import BatchedModelOptions

__all__ = [
    "JUDGE_TEMPLATES",
    "ChatModelJudge",
    "GenerativeChatJudge",
    "JudgeTemplate",
    "TransformersJudge",
    "TransformersJudgeOptions",
    "check_prompt_options",
    "user_text",
]

logger = logging.getLogger(__name__)

JUDGE_NWAY_V1 = """\
Please act as an impartial judge and evaluate the quality of the responses provided by {num} AI assistants to the user question displayed below. You should choose the assistant that follows the user's instructions and answers the user's question best. Your evaluation should consider factors such as the helpfulness, relevance, accuracy, depth, creativity, and level of detail of their responses. Begin your evaluation by comparing the {num} responses and provide a short explanation. Avoid any position biases and ensure that the order in which the responses were presented does not influence your decision. Do not allow the length of the responses to influence your evaluation. Do not favor certain names of the assistants. Be as objective as possible. After providing your explanation, output your final verdict by strictly following this format: {formats}. Write the verdict marker exactly once.

[User Question]
{question}

{answers}"""
ANSWER_BLOCK = (
    "[The Start of Assistant {letter}'s Answer]\n{text}\n[The End of Assistant {letter}'s Answer]"
)
FORMAT_ITEM = '"[[{letter}]]" if assistant {letter} is best'

# Template ``judge_nway_verdict_v1``: the same judging instruction, shortened, with the format
# instruction *after* the answers (next to where the model writes) and worked once: the verdict
# comes first, on its own line, then one sentence of reason. A small model then writes its
# marker within a few tokens; the verdict readout (judge/judges/readout.py) reads the same slot.
# ``{last}`` is the last letter of the prompt (the worked example's verdict).
JUDGE_NWAY_VERDICT_V1 = """\
Please act as an impartial judge and decide which of the {num} AI assistants below answers the user question best. Consider helpfulness, relevance, accuracy and level of detail. Do not let the order of the answers, their length or the assistants' names influence your decision.

[User Question]
{question}

{answers}

Which assistant answers best? Start your reply with the verdict on its own line, then give one short sentence of reason. The verdict is exactly one of {formats}. For example, if assistant {last} answered best, your reply would start:
Verdict: [[{last}]]
Reason: Assistant {last} answers the question correctly and completely."""


@dataclass(frozen=True)
class JudgeTemplate:
    template_id: str
    instruction: str
    answer_block: str
    format_item: str

    @property
    def version(self) -> str:
        blob = "\x00".join((self.instruction, self.answer_block, self.format_item))
        return f"{self.template_id}:{hashlib.sha256(blob.encode('utf-8')).hexdigest()[:12]}"

    def render(self, question: str, answers: Sequence[str]) -> str:
        n = len(answers)
        items = [self.format_item.format(letter=slot_letter(i)) for i in range(n)]
        formats = ", ".join(items[:-1]) + f", and {items[-1]}" if n > 2 else " or ".join(items)
        blocks = "\n\n".join(
            self.answer_block.format(letter=slot_letter(i), text=a) for i, a in enumerate(answers)
        )
        return self.instruction.format(
            num=n, formats=formats, question=question, answers=blocks, last=slot_letter(n - 1)
        )


JUDGE_TEMPLATES: dict[str, JudgeTemplate] = {
    "judge_nway_v1": JudgeTemplate("judge_nway_v1", JUDGE_NWAY_V1, ANSWER_BLOCK, FORMAT_ITEM),
    "judge_nway_verdict_v1": JudgeTemplate(
        "judge_nway_verdict_v1", JUDGE_NWAY_VERDICT_V1, ANSWER_BLOCK, '"[[{letter}]]"'
    ),
}


def user_text(template: JudgeTemplate, req: JudgeRequest, max_response_chars: int | None) -> str:
    """The user turn of ``req``: ``template`` with the responses in slot order, each stripped
    and cut to ``max_response_chars`` (None: whole)."""
    cut = max_response_chars
    answers = [a.strip()[:cut] if cut else a.strip() for a in req.shown]
    return template.render(req.item.prompt.strip(), answers)


def check_template(name: str) -> None:
    if name not in JUDGE_TEMPLATES:
        raise ConfigError(f"unknown judge template {name!r}: {sorted(JUDGE_TEMPLATES)}")


@dataclass(frozen=True)
class JudgePromptOptions(JudgeOptions):
    """What every judge of a chat model takes for its prompt: the template, the cut of each
    response, the chat template's extra arguments."""

    template: str = opt("judge_nway_v1", "judge prompt template id")
    max_response_chars: int | None = opt(2000, "cut each response to this many characters")
    chat_template_kwargs: dict[str, Any] = field(
        default_factory=dict,
        metadata={"help": "extra apply_chat_template kwargs, e.g. {enable_thinking: false}"},
    )


@dataclass(frozen=True)
class GenerativeJudgeOptions(JudgePromptOptions):
    """What a judge that writes its verdict adds: the decoding budget, the parser's rule and
    the prefilled start of its response."""

    max_new_tokens: int = opt(256, "generation budget per judgement")
    parser_rule: str = opt("strict", "strict (exactly one marker) or last (the last marker)")
    answer_prefix: str = opt(
        "",
        "text the response starts with (prefilled, then generated on; part of the parsed "
        'judgement), e.g. "Verdict: [["; "" = none',
    )


@dataclass(frozen=True)
class TransformersJudgeOptions(BatchedModelOptions, GenerativeJudgeOptions):
    """Options of the generative judge (greedy, temperature 0)."""

    batch_size: int = opt(1, "prompts per generate call (left-padded)")
    seed: int = opt(0, "torch seed set before every generate call (recorded; decoding is greedy)")

    def __post_init__(self) -> None:
        super().__post_init__()
        check_prompt_options(self)


def check_prompt_options(o: GenerativeJudgeOptions) -> None:
    """The checks of what a generative judge's prompt and parser take from its options."""
    check_template(o.template)
    if o.parser_rule not in PARSER_RULES:
        raise ConfigError(f"parser_rule must be one of {PARSER_RULES}, got {o.parser_rule!r}")
    check_counts(o, "max_new_tokens")
    check_counts(o, "max_response_chars", nullable=True)


class ChatModelJudge:
    """What the transformers judges share: checked options, the template, the model (loaded on
    first use), the prompt's user turn and the identity (``judge_class``, ``parser_version``)."""

    config_cls: ClassVar[type[JudgeOptions]]
    judge_class: ClassVar[str]
    options: Any  # the subclass's options

    def __init__(self, options: JudgeOptions | None = None) -> None:
        self.options = checked_options(self, options, self.config_cls)
        self.template = JUDGE_TEMPLATES[self.options.template]
        self._backend: Any = None
        self._snapshot: str | None = None

    def _load(self) -> Any:
        """The model's :class:`~presentation_dependence.readout.backend.TransformersBackend`."""
        if self._backend is None:
            self._backend, self._snapshot = load_generator(self.options)
        return self._backend

    @property
    @abstractmethod
    def prompt_version(self) -> str: ...

    @property
    @abstractmethod
    def parser_version(self) -> str: ...

    def prompt_text(self, req: JudgeRequest) -> str:
        """The user turn: the judge template with the responses in slot order."""
        return user_text(self.template, req, self.options.max_response_chars)

    def identity(self) -> JudgeIdentity:
        self._load()
        assert self._snapshot is not None
        version, seed = self.prompt_version, self.options.seed
        return JudgeIdentity(self.judge_class, self._snapshot, version, self.parser_version, seed)


class GenerativeChatJudge(ChatModelJudge):
    """A chat judge that writes its verdict (transformers or a server): the prompt version with
    its answer prefix, the parser of its ``parser_rule``."""

    @property
    def prompt_version(self) -> str:
        """The template's version, plus ``+prefix:<sha256[:8]>`` with an answer prefix."""
        version, prefix = self.template.version, self.options.answer_prefix
        if not prefix:
            return version
        return f"{version}+prefix:{hashlib.sha256(prefix.encode()).hexdigest()[:8]}"

    @property
    def parser_version(self) -> str:
        return parser_version(self.options.parser_rule)

    def prompt_ids(self, req: JudgeRequest) -> list[int]:
        """The prompt's token ids: the user turn in the chat template, then the answer prefix."""
        o, tok = self.options, self._load()
        return encode_chat(
            tok.tokenizer, tok.path, self.prompt_text(req), o.chat_template_kwargs, o.answer_prefix
        )

    def record(self, req: JudgeRequest, g: Generation) -> JudgeRecord:
        """The record of ``req`` whose judgement (after the answer prefix) is ``g``."""
        o = self.options
        return verdict_record(
            req,
            o.answer_prefix + g.text,
            o.parser_rule,
            token_ids=g.token_ids,
            finish=g.finish,
            prompt_tokens=g.prompt_tokens,
        )


@JUDGES.register("transformers")
class TransformersJudge(GenerativeChatJudge):
    """The N-way generative judge on a transformers causal LM."""

    config_cls: ClassVar[type[JudgeOptions]] = TransformersJudgeOptions
    judge_class: ClassVar[str] = "transformers"
    options: TransformersJudgeOptions
    _generator: Any = None

    def _ensure_loaded(self) -> Any:
        if self._generator is None:
            o = self.options
            self._generator = TransformersGenerator(
                self._load(), max_new_tokens=o.max_new_tokens, seed=o.seed
            )
        return self._generator

    def judge(
        self,
        requests: Sequence[JudgeRequest],
        *,
        batch_size: int | None = None,
        one_at_a_time: bool | None = None,
    ) -> list[JudgeRecord]:
        gen = self._ensure_loaded()
        o = self.options
        prompts = [self.prompt_ids(r) for r in requests]
        limit = gen.backend.max_context
        for r, p in zip(requests, prompts, strict=True):
            if limit is not None and len(p) + o.max_new_tokens > limit:
                raise ConfigError(
                    f"item {r.item.item_id!r}: {len(p)} prompt tokens + {o.max_new_tokens} new "
                    f"exceed the model's context {limit}. Fix: lower max_response_chars"
                )
        outs, stats = gen.generate(
            prompts,
            batch_size=o.batch_size if batch_size is None else batch_size,
            one_at_a_time=o.one_at_a_time if one_at_a_time is None else one_at_a_time,
            num_threads=o.num_threads,
        )
        logger.info(
            "judged %d prompts in %d generate calls: %d prompt + %d new tokens, %.1f s",
            len(requests),
            stats.calls,
            stats.prompt_tokens,
            stats.new_tokens,
            stats.seconds,
        )
        return [self.record(r, g) for r, g in zip(requests, outs, strict=True)]

    def describe(self) -> dict[str, Any]:
        gen = self._ensure_loaded()
        return describe_judge(
            self.judge_class,
            self.identity(),
            self.options,
            **gen.backend.describe(),
            decoding="greedy (temperature 0)",
            eos_token_ids=list(gen.eos_ids),
        )
