"""Line-level helpers shared by the readers: UTF-8 decoding, blank lines, strict numbers."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from presentation_dependence.errors import InputFormatError
from presentation_dependence.registry import did_you_mean

__all__ = ["check_id", "check_keys", "iter_lines", "parse_float", "parse_int"]
__all__ += ["decode_text", "parse_json_line", "read_text"]


BOM = b"\xef\xbb\xbf"


def check_keys(
    path: Path, lineno: int, obj: Mapping[str, Any], allowed: Sequence[str], fix: str
) -> None:
    """An :class:`InputFormatError` (with a did-you-mean) for a key of ``obj`` not ``allowed``."""
    for key in obj:
        if key not in allowed:
            expected = f"only the keys {', '.join(allowed)}"
            unknown = f"unknown key {key!r}.{did_you_mean(str(key), list(allowed))}"
            raise InputFormatError(path, lineno, expected, unknown, fix)


def read_text(path: Path) -> str:
    """The whole file as UTF-8 text; a decoding error names the line it happened on.

    A leading UTF-8 byte-order mark (as Windows editors write) is dropped: it is not part of
    the first line's data (left in, it would glue itself to the first query id).
    """
    return decode_text(path, path.read_bytes())


def decode_text(path: Path, data: bytes) -> str:
    """``data`` (the bytes of ``path``, e.g. decompressed) as :func:`read_text` reads a file."""
    if data.startswith(BOM):
        data = data[len(BOM) :]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputFormatError(
            path,
            line,
            "UTF-8 text",
            f"an undecodable byte at offset {exc.start}",
            "re-encode the file as UTF-8 (e.g. iconv -t UTF-8)",
        ) from None


def iter_lines(path: Path, text: str | None = None) -> Iterator[tuple[int, str]]:
    """``(1-based line number, line without its line end)`` for every non-blank line of
    ``path`` (of ``text``, its already decoded content, when given).

    Lines end at ``\n`` (a trailing ``\r`` is dropped) only: unlike :meth:`str.splitlines`,
    form feeds or U+2028 inside a document's text do not split it.
    """
    for lineno, raw in enumerate((read_text(path) if text is None else text).split("\n"), 1):
        line = raw[:-1] if raw.endswith("\r") else raw
        if line.strip():
            yield lineno, line


def check_id(path: Path, lineno: int | None, value: str, what: str) -> str:
    """``value`` when it can be written to a TREC file as ``what`` (a query id, a docid), else an
    :class:`InputFormatError` on its line: non-empty, no whitespace, no control characters.

    Ids are checked where they are read so a bad one stops the run before any compute (TREC
    runs and qrels split columns at whitespace; run-folder file names are derived from ids).
    """
    if not value or any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in value):
        raise InputFormatError(
            path,
            lineno,
            f"a {what} without whitespace or control characters",
            repr(value),
            "rename the id (e.g. replace spaces with '_'): TREC files split columns at "
            "whitespace, so such an id cannot be written to a run or qrels file",
        )
    return value


def parse_int(path: Path, lineno: int, value: str, what: str, fix: str) -> int:
    """``value`` as an integer (``'3'``, ``'-1'``; not ``'3.0'``), else InputFormatError."""
    try:
        return int(value)
    except ValueError:
        raise InputFormatError(path, lineno, f"an integer {what}", repr(value), fix) from None


def parse_float(path: Path, lineno: int, value: str, what: str, fix: str) -> float:
    """``value`` as a finite float, else :class:`InputFormatError`."""
    try:
        out = float(value)
    except ValueError:
        raise InputFormatError(path, lineno, f"a numeric {what}", repr(value), fix) from None
    if not math.isfinite(out):
        raise InputFormatError(path, lineno, f"a finite {what}", repr(value), fix)
    return out


def parse_json_line(path: Path, lineno: int, line: str) -> dict[str, Any]:
    """One JSON-lines record, which must be an object."""
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InputFormatError(
            path,
            lineno,
            "one JSON object per line",
            f"invalid JSON ({exc.msg} at column {exc.colno})",
            "fix the JSON on this line; every record must sit on a single line",
        ) from None
    if not isinstance(obj, dict):
        raise InputFormatError(
            path,
            lineno,
            "a JSON object",
            f"a JSON {type(obj).__name__}",
            "write one {...} object per line",
        )
    return obj
