"""The readout prompt: template text, slot positions, the single-token rule, truncation."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from presentation_dependence.errors import ConfigError
from presentation_dependence.models.embedded import load_embedded_tokenizer
from presentation_dependence.readout.prompt import (
    INTERLEAVED_GRADE_V1_INSTRUCTION,
    PATHC_GRADE_V1_INSTRUCTION,
    GradeLabelTokenizationError,
    PromptBuilder,
    PromptTooLongError,
    clean_text,
    get_template,
)

DOC = Path(__file__).resolve().parents[2] / "docs" / "SCORING.md"
LABELS = ("0", "1", "2", "3")
PASSAGES = [
    "The life cycle of a flea can last anywhere from 20 days to an entire year.",
    "Fleas\n\nlay   eggs on the host.",
    "An unrelated passage about the history of the Roman empire and its roads.",
]


@pytest.fixture(scope="session")
def tokenizer() -> Any:
    """The SmolLM2 tokenizer from the embedded GGUF (converted once per process)."""
    return load_embedded_tokenizer()


def builder(tokenizer: Any, **kw: Any) -> PromptBuilder:
    labels = kw.pop("labels", LABELS)
    return PromptBuilder(tokenizer, get_template("pathc_grade_v1"), labels, **kw)


class SlowTokenizer:
    """The same tokenizer seen as a slow one (no offsets): exercises the prefix fallback."""

    is_fast = False

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def __call__(self, text: str, **kw: Any) -> Any:
        assert "return_offsets_mapping" not in kw
        return self._inner(text, **kw)


def _doc_block(marker: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    m = re.search(
        rf"<!-- {marker}:start -->\n```text\n(.*?)\n```\n<!-- {marker}:end -->", text, re.S
    )
    assert m, f"docs/SCORING.md has no {marker} block"
    return m.group(1)


def test_doc_quotes_the_template_verbatim() -> None:
    assert _doc_block("pathc_grade_v1:instruction") == PATHC_GRADE_V1_INSTRUCTION
    t = get_template("pathc_grade_v1")
    skeleton, _ = t.render_skeleton(3, "1")
    assert _doc_block("pathc_grade_v1:skeleton") == skeleton
    assert t.filler_index == 1


def test_slot_positions_point_at_the_grade_tokens(tokenizer: Any) -> None:
    b = builder(tokenizer)
    p = b.build("how long is the life cycle of a flea", PASSAGES)
    assert len(p.grade_positions) == len(PASSAGES)
    filler_id = b.grade_token_ids[1]
    for slot, pos in enumerate(p.grade_positions, start=1):
        assert p.input_ids[pos] == filler_id
        before = tokenizer.decode(list(p.input_ids[:pos]))
        assert before.endswith(f"[{slot}] grade:")
        assert p.readout_positions[slot - 1] == pos - 1
    # the skeleton follows the assistant-turn start of the model's own chat template
    assert p.text.endswith("<|im_start|>assistant\n[1] grade:1\n[2] grade:1\n[3] grade:1")
    assert list(p.input_ids) == tokenizer(p.text, add_special_tokens=False)["input_ids"]
    assert b.grade_token_ids == tuple(tokenizer.convert_tokens_to_ids(list(LABELS)))


def test_offsets_and_prefix_tokenization_agree(tokenizer: Any) -> None:
    fast = builder(tokenizer).build("q", PASSAGES * 4)
    slow = builder(SlowTokenizer(tokenizer)).build("q", PASSAGES * 4)
    assert fast.input_ids == slow.input_ids
    assert fast.grade_positions == slow.grade_positions


@pytest.mark.parametrize("labels", [("10", "11", "12", "13"), (" 0", " 1", " 2", " 3")])
def test_multi_token_label_fails_loudly(tokenizer: Any, labels: tuple[str, ...]) -> None:
    b = builder(tokenizer, labels=labels)
    with pytest.raises(GradeLabelTokenizationError) as exc:
        b.build("q", PASSAGES)
    msg = str(exc.value)
    assert repr(labels[0]) in msg and "single token" in msg and "Fix:" in msg
    assert isinstance(exc.value, ValueError)  # a ConfigError, hence a ValueError


def test_passages_are_cleaned_and_cut(tokenizer: Any) -> None:
    assert clean_text(" a\n\n b\t c ") == "a b c"
    p = builder(tokenizer, max_passage_chars=10).build("q", PASSAGES)
    assert p.passages == tuple(clean_text(x)[:10] for x in PASSAGES)
    assert "\n[2] Fleas lay \n" in p.text


def test_token_budget_truncates_every_passage_the_same_way(tokenizer: Any) -> None:
    long = [" ".join([f"word{i}"] * 200) for i in range(4)]
    full = builder(tokenizer, max_passage_chars=None).build("q", long)
    budget = len(full) - 300
    b = builder(tokenizer, max_passage_chars=None, max_prompt_tokens=budget)
    p = b.build("q", long)
    assert len(p) <= budget and p.token_truncated == 4
    # a passage's cut depends on the budget and the number of passages, not on their order
    q = b.build("q", long[::-1])
    assert p.passages == q.passages[::-1]


def test_budget_too_small_for_the_frame(tokenizer: Any) -> None:
    with pytest.raises(PromptTooLongError, match="Fix:"):
        builder(tokenizer, max_prompt_tokens=64).build("q", PASSAGES * 10)


def test_unknown_template_and_missing_chat_template(tokenizer: Any) -> None:
    with pytest.raises(ConfigError, match="Did you mean 'pathc_grade_v1'"):
        get_template("pathc_grade_v2")

    class NoChat(SlowTokenizer):
        chat_template = None

    with pytest.raises(ConfigError, match="no chat template"):
        builder(NoChat(tokenizer))


def test_interleaved_template_puts_each_slot_right_after_its_passage(tokenizer: Any) -> None:
    b = PromptBuilder(tokenizer, get_template("interleaved_grade_v1"), LABELS)
    p = b.build("how long is the life cycle of a flea", PASSAGES)
    user, answer = p.text.split("<|im_start|>assistant\n")
    for text in p.passages:
        assert text not in user  # the passages are written in the answer skeleton only
    filler_id = b.grade_token_ids[1]
    for slot, (pos, text) in enumerate(zip(p.grade_positions, p.passages, strict=True), start=1):
        assert p.input_ids[pos] == filler_id
        before = tokenizer.decode(list(p.input_ids[:pos]))
        assert before.endswith(f"[{slot}] {text} grade:")
    assert answer.count(" grade:1") == len(PASSAGES)
    assert list(p.input_ids) == tokenizer(p.text, add_special_tokens=False)["input_ids"]
    # the same grade tokens as the trailing skeleton
    trailing = builder(tokenizer)
    trailing.build("q", PASSAGES[:1])
    assert b.grade_token_ids == trailing.grade_token_ids


def test_interleaved_skeleton_needs_the_passages() -> None:
    t = get_template("interleaved_grade_v1")
    assert t.interleaved and not get_template("pathc_grade_v1").interleaved
    with pytest.raises(ValueError, match="needs the 2 passages"):
        t.render_skeleton(2, "1")
    text, offsets = t.render_skeleton(2, "1", ["a b", "c"])
    assert text == "[1] a b grade:1\n[2] c grade:1"
    assert [text[o] for o in offsets] == ["1", "1"]


def test_doc_quotes_the_interleaved_template_verbatim() -> None:
    assert _doc_block("interleaved_grade_v1:instruction") == INTERLEAVED_GRADE_V1_INSTRUCTION
    t = get_template("interleaved_grade_v1")
    skeleton, _ = t.render_skeleton(3, "1", ["<passage 1>", "<passage 2>", "<passage 3>"])
    assert _doc_block("interleaved_grade_v1:skeleton") == skeleton
