"""The parse stage of the N-way judge: the strict verdict parser, and the record it yields
(:func:`verdict_record`, what every judge returns per call).

A *marker* is any ``[[X]]`` where X is one letter, upper or lower case, with optional spaces
inside the brackets (``[[ b ]]`` is a marker). A marker is *valid* when it is exactly
``[[L]]`` with L one of the N upper-case letters A.. (A + N − 1) of the prompt.

Rules (``rule``; the version string names it and is part of every cache key):

``strict`` (default; the judge prompt asks for exactly one verdict marker)
    The judgement must hold exactly one marker, and it must be valid. No marker -> ``no_marker``;
    two or more markers, even the same letter twice or one quoted in the reasoning ->
    ``multiple_markers``; a single malformed or out-of-range marker (``[[a]]``, ``[[E]]`` for
    N = 4) -> ``invalid_marker``.
``last`` (for formats that let the judge restate or quote markers before its verdict)
    The *last* marker in the text is the verdict, if it is valid (else ``invalid_marker``);
    earlier markers are taken as quotations.

Neither rule reads the first marker it finds: RewardBench 2 checks ``[[A]]`` before ``[[B]]``,
so a judgement that merely mentions ``[[A]]`` reads as A. Failures carry no credit here; the
scoring conventions (0 or 1/N) are applied later and both are reported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from presentation_dependence.errors import ConfigError
from presentation_dependence.judge.items.records import JudgeRecord, JudgeRequest

__all__ = [
    "PARSER_RULES",
    "PARSE_OK",
    "ParseResult",
    "parse_verdict",
    "parser_version",
    "verdict_record",
]

ParserRule = Literal["strict", "last"]
PARSER_RULES: tuple[str, ...] = ("strict", "last")
PARSE_OK = "ok"
_MARKER = re.compile(r"\[\[\s*([A-Za-z])\s*\]\]")
_VERSION = 1


def parser_version(rule: str) -> str:
    """``verdict-<rule>-v1``: recorded with every run and part of the gate's cache key."""
    if rule not in PARSER_RULES:
        raise ConfigError(f"parser rule must be one of {PARSER_RULES}, got {rule!r}")
    return f"verdict-{rule}-v{_VERSION}"


@dataclass(frozen=True)
class ParseResult:
    """``slot`` (0-based) and ``letter`` are None unless ``status`` is ``ok``."""

    status: str
    slot: int | None
    letter: str | None
    num_markers: int

    @property
    def ok(self) -> bool:
        return self.status == PARSE_OK


def _valid(match: re.Match[str], n: int) -> int | None:
    letter = match.group(1)
    if match.group(0) != f"[[{letter}]]" or not letter.isupper():
        return None
    slot = ord(letter) - ord("A")
    return slot if 0 <= slot < n else None


def parse_verdict(text: str, n: int, rule: str = "strict") -> ParseResult:
    """Parse the verdict of an ``n``-way judgement under ``rule`` (module docstring)."""
    parser_version(rule)
    if not 2 <= n <= 26:
        raise ValueError(f"n must be in 2..26, got {n}")
    markers = list(_MARKER.finditer(text))
    count = len(markers)
    if count == 0:
        return ParseResult("no_marker", None, None, 0)
    if rule == "strict" and count > 1:
        return ParseResult("multiple_markers", None, None, count)
    chosen = markers[-1]  # the only one under "strict"
    slot = _valid(chosen, n)
    if slot is None:
        return ParseResult("invalid_marker", None, None, count)
    return ParseResult(PARSE_OK, slot, chr(ord("A") + slot), count)


def verdict_record(req: JudgeRequest, text: str, rule: str, **kw: Any) -> JudgeRecord:
    """Parse ``text`` as the judgement of ``req`` and build its record."""
    res = parse_verdict(text, req.n, rule)
    return JudgeRecord(
        item_id=req.item.item_id,
        source=req.item.source,
        subset=req.item.subset,
        n=req.n,
        placement=req.placement,
        correct_slot=req.correct_slot,
        repeat=req.repeat,
        judgement=text,
        verdict=res.letter,
        verdict_slot=res.slot,
        parse_status=res.status,
        **kw,
    )
