"""Frozen records of the judge: a response set, one judge call, and what the judge answered.

* :class:`ResponseItem`: a prompt with its candidate responses and a correctness label per
  response (what every loader returns).
* :class:`JudgeRequest`: one N-way judge call, i.e. an item shown in one placement (slot j shows
  response ``placement[j]``) at one repeat index.
* :class:`JudgeRecord`: the request's identity plus everything the judge produced: the raw
  judgement text, the generated token ids, the parsed verdict, the parse status, and whether the
  verdict names the correct slot. Records hold no timings, so a rerun with the same seed gives
  byte-identical JSONL on CPU (tested).

JSONL files are written atomically (:func:`write_records`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from presentation_dependence.errors import InputFormatError
from presentation_dependence.io._lines import iter_lines
from presentation_dependence.io.atomic import atomic_write_text
from presentation_dependence.secrets import refuse_secret

__all__ = [
    "JudgeRecord",
    "JudgeRequest",
    "ResponseItem",
    "read_records",
    "slot_letter",
    "write_records",
]


def slot_letter(slot: int) -> str:
    """0 -> 'A', 1 -> 'B', ... (at most 26 slots)."""
    if not 0 <= slot < 26:
        raise ValueError(f"slot must be in 0..25, got {slot}")
    return chr(ord("A") + slot)


@dataclass(frozen=True)
class ResponseItem:
    """A prompt with N candidate responses; ``labels[i]`` is True when response i is correct
    (chosen). ``item_id`` is stable across runs: placements are drawn from it."""

    item_id: str
    prompt: str
    responses: tuple[str, ...]
    labels: tuple[bool, ...]
    source: str = ""
    subset: str = ""

    def __post_init__(self) -> None:
        if not self.item_id:
            raise ValueError("ResponseItem.item_id must be non-empty")
        if len(self.responses) != len(self.labels):
            raise ValueError(
                f"item {self.item_id!r}: {len(self.responses)} responses, {len(self.labels)} labels"
            )
        if len(self.responses) < 2:
            raise ValueError(f"item {self.item_id!r}: needs at least 2 responses")

    @property
    def num_correct(self) -> int:
        return sum(self.labels)

    @property
    def correct_index(self) -> int:
        """The index of the single correct response (an error unless exactly one is correct)."""
        if self.num_correct != 1:
            raise ValueError(f"item {self.item_id!r} has {self.num_correct} correct responses")
        return self.labels.index(True)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "responses": list(self.responses), "labels": list(self.labels)}


@dataclass(frozen=True)
class JudgeRequest:
    """One N-way judge call: slot j shows ``item.responses[placement[j]]``."""

    item: ResponseItem
    placement: tuple[int, ...]
    repeat: int = 0

    def __post_init__(self) -> None:
        if sorted(self.placement) != list(range(len(self.item.responses))):
            raise ValueError(
                f"item {self.item.item_id!r}: placement {self.placement} is not a permutation "
                f"of its {len(self.item.responses)} responses"
            )
        self.item.correct_index  # noqa: B018  (validates: exactly one correct response)

    @property
    def n(self) -> int:
        return len(self.placement)

    @property
    def correct_slot(self) -> int:
        """0-based slot that shows the correct response."""
        return self.placement.index(self.item.correct_index)

    @property
    def shown(self) -> tuple[str, ...]:
        """The responses in slot order."""
        return tuple(self.item.responses[i] for i in self.placement)

    @property
    def key(self) -> tuple[str, tuple[int, ...], int]:
        return (self.item.item_id, self.placement, self.repeat)


@dataclass(frozen=True)
class JudgeRecord:
    """What one judge call produced. ``verdict_slot`` is None when the judgement did not parse.

    ``correct`` is True only for a parsed verdict that names ``correct_slot``; a parse failure is
    not correct (its credit under each convention is :meth:`score`).
    """

    item_id: str
    source: str
    subset: str
    n: int
    placement: tuple[int, ...]
    correct_slot: int
    repeat: int
    judgement: str
    verdict: str | None
    verdict_slot: int | None
    parse_status: str
    token_ids: tuple[int, ...] = ()
    finish: str = ""
    prompt_tokens: int = 0
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def parsed(self) -> bool:
        return self.verdict_slot is not None

    @property
    def correct(self) -> bool:
        return self.verdict_slot is not None and self.verdict_slot == self.correct_slot

    @property
    def key(self) -> tuple[str, tuple[int, ...], int]:
        return (self.item_id, self.placement, self.repeat)

    def score(self, failure_credit: float = 0.0) -> float:
        """1 for a correct verdict, 0 for a wrong one, ``failure_credit`` for a parse failure
        (0 or 1/N are the two conventions reported)."""
        if not self.parsed:
            return failure_credit
        return 1.0 if self.correct else 0.0

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "item_id": self.item_id,
            "source": self.source,
            "subset": self.subset,
            "n": self.n,
            "placement": list(self.placement),
            "correct_slot": self.correct_slot,
            "repeat": self.repeat,
            "judgement": self.judgement,
            "verdict": self.verdict,
            "verdict_slot": self.verdict_slot,
            "parse_status": self.parse_status,
            "correct": self.correct,
            "token_ids": list(self.token_ids),
            "finish": self.finish,
            "prompt_tokens": self.prompt_tokens,
        }
        if self.extra:
            d["extra"] = dict(self.extra)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> JudgeRecord:
        slot = d.get("verdict_slot")
        return cls(
            item_id=str(d["item_id"]),
            source=str(d.get("source", "")),
            subset=str(d.get("subset", "")),
            n=int(d["n"]),
            placement=tuple(int(x) for x in d["placement"]),
            correct_slot=int(d["correct_slot"]),
            repeat=int(d.get("repeat", 0)),
            judgement=str(d["judgement"]),
            verdict=None if d.get("verdict") is None else str(d["verdict"]),
            verdict_slot=None if slot is None else int(slot),
            parse_status=str(d["parse_status"]),
            token_ids=tuple(int(t) for t in d.get("token_ids", ())),
            finish=str(d.get("finish", "")),
            prompt_tokens=int(d.get("prompt_tokens", 0)),
            extra=dict(d.get("extra", {})),
        )


def write_records(path: str | Path, records: Iterable[JudgeRecord]) -> Path:
    """One JSON object per line, keys in a fixed order, written atomically.

    Records are results: a secret in one is refused, never redacted (:mod:`..secrets`)."""
    text = "".join(json.dumps(r.to_dict(), ensure_ascii=False) + "\n" for r in records)
    refuse_secret(text, str(path))
    return atomic_write_text(path, text)


def read_records(path: str | Path) -> list[JudgeRecord]:
    """The records of a JSONL file; anything else is an error naming the file and line."""
    out: list[JudgeRecord] = []
    p = Path(path)
    for lineno, line in iter_lines(p):
        try:
            obj = json.loads(line)
            if not isinstance(obj, dict):
                raise TypeError(f"a JSON {type(obj).__name__}, not an object")
            out.append(JudgeRecord.from_dict(obj))
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise InputFormatError(
                p,
                lineno,
                "a judge record (JSON object)",
                f"{type(e).__name__}: {e}",
                "rewrite the file, or delete it if it is a cache",
            ) from None
    return out
