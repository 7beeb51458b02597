"""Strict reading of response-set files: every field is parsed, never coerced.

A label is the documented JSON value or an error: ``bool("false")`` is True and ``int(2.7)``
is 2, so a coerced label flips an item silently. :class:`Site` is where a record sits (a file
and its line for JSON lines, a file and its item index for a JSON list, a hub data set and its
row); its readers raise an :class:`~presentation_dependence.errors.InputFormatError` naming
that place, the field, what was expected, what was found (as JSON) and the fix.
:func:`json_lines` and :func:`json_list` read whole files the same way (undecodable bytes, a
broken gzip stream and invalid JSON included).
"""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from presentation_dependence.errors import InputFormatError
from presentation_dependence.io._lines import decode_text, iter_lines, parse_json_line
from presentation_dependence.judge.items.records import ResponseItem

__all__ = ["Site", "json_lines", "json_list"]

BOOL_FIX = "write true or false (a JSON boolean, without quotes)"


def shown(value: Any) -> str:
    """``value`` as JSON (``"false"`` for a string, ``false`` for a boolean), shortened."""
    text = json.dumps(value, ensure_ascii=False, default=repr)
    return text if len(text) <= 60 else text[:57] + "..."


def _name(key: str, within: str) -> str:
    return f"{within}.{key}" if within else key


@dataclass(frozen=True)
class Site:
    """Where a record sits: ``path`` with its 1-based ``line``, or its 0-based ``item`` index."""

    path: Path | str
    fix: str
    line: int | None = None
    item: int | None = None

    @property
    def position(self) -> int:
        """The 0-based place of the record: its item index, or its line number minus 1."""
        return self.item if self.item is not None else (self.line or 1) - 1

    def error(self, expected: str, got: str, fix: str | None = None) -> InputFormatError:
        where = str(self.path)
        if self.item is not None:
            where += f" (item {self.item}, counting from 0)"
        return InputFormatError(where, self.line, expected, got, fix or self.fix)

    def record(self, obj: Any) -> Mapping[str, Any]:
        if not isinstance(obj, Mapping):
            raise self.error("a JSON object", f"a JSON {type(obj).__name__}")
        return obj

    def field(self, d: Mapping[str, Any], key: str, within: str = "") -> Any:
        """``d[key]``; ``within`` names ``d`` inside the record (``6b_finetuning``)."""
        if key not in d:
            raise self.error(f"the key {_name(key, within)!r}", "it is missing")
        return d[key]

    def part(self, d: Mapping[str, Any], key: str) -> Mapping[str, Any]:
        """``d[key]``, which must be an object."""
        value = self.field(d, key)
        if not isinstance(value, Mapping):
            raise self.error(f"a JSON object {key}", shown(value))
        return value

    def text(self, d: Mapping[str, Any], key: str, within: str = "") -> str:
        value = self.field(d, key, within)
        if not isinstance(value, str):
            raise self.error(f"a string {_name(key, within)}", shown(value))
        return value

    def texts(self, d: Mapping[str, Any], key: str) -> list[str]:
        """A list of strings (the responses)."""
        value = self.field(d, key)
        if not isinstance(value, list):
            raise self.error(f"a list of strings {key}", shown(value))
        for i, x in enumerate(value):
            if not isinstance(x, str):
                raise self.error(f"a string {key}[{i}]", shown(x))
        return value

    def boolean(self, value: Any, what: str) -> bool:
        """A JSON boolean; ``"false"``, 0 or null are refused (never coerced)."""
        if not isinstance(value, bool):
            raise self.error(f"{what} true or false", shown(value), BOOL_FIX)
        return value

    def booleans(self, d: Mapping[str, Any], key: str) -> tuple[bool, ...]:
        value = self.field(d, key)
        if not isinstance(value, list):
            raise self.error(f"a list of true or false {key}", shown(value), BOOL_FIX)
        return tuple(self.boolean(x, f"{key}[{i}]") for i, x in enumerate(value))

    def choice(self, d: Mapping[str, Any], key: str, allowed: tuple[int, ...]) -> int:
        """An integer among ``allowed`` (not 2.0 or 2.7, not true)."""
        value = self.field(d, key)
        if type(value) is not int or value not in allowed:
            names = " or ".join(map(str, allowed))
            raise self.error(f"{key} {names} (a JSON integer)", shown(value), f"write {names}")
        return value

    def ident(self, d: Mapping[str, Any], key: str) -> str:
        """A non-empty string or an integer id, as text."""
        value = self.field(d, key)
        if type(value) is int or (isinstance(value, str) and value):
            return str(value)
        raise self.error(f"a non-empty string or integer {key}", shown(value))

    def response_item(self, **fields: Any) -> ResponseItem:
        """A :class:`ResponseItem`; its own checks (2+ responses, one label each) named here."""
        try:
            return ResponseItem(**fields)
        except ValueError as e:
            raise self.error("a response set item", str(e)) from None


def json_lines(path: Path, fix: str) -> Iterator[tuple[Site, Mapping[str, Any]]]:
    """``(site, object)`` for every non-blank line of a JSON-lines file (``.gz`` included)."""
    text = None
    if path.name.endswith(".gz"):
        try:
            data = gzip.decompress(path.read_bytes())
        except (OSError, EOFError, zlib.error) as e:
            raise InputFormatError(path, None, "a gzip file", str(e), fix) from None
        text = decode_text(path, data)
    for lineno, line in iter_lines(path, text):
        yield Site(path, fix, line=lineno), parse_json_line(path, lineno, line)


def json_list(path: Path, fix: str) -> Iterator[tuple[Site, Mapping[str, Any]]]:
    """``(site, object)`` for every item of a file holding one JSON list of objects."""
    try:
        data = json.loads(decode_text(path, path.read_bytes()))
    except json.JSONDecodeError as e:
        got = f"invalid JSON ({e.msg} at column {e.colno})"
        raise InputFormatError(path, e.lineno, "one JSON list of items", got, fix) from None
    if not isinstance(data, list):
        raise InputFormatError(path, None, "a JSON list of items", shown(data), fix)
    for idx, obj in enumerate(data):
        site = Site(path, fix, item=idx)
        yield site, site.record(obj)
