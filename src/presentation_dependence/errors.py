"""Exceptions that tell the user where the problem is and how to fix it."""

from __future__ import annotations

import reprlib
from pathlib import Path
from typing import Any

__all__ = [
    "ConfigError",
    "InputFormatError",
    "PresdepError",
    "RegistryError",
    "RerankerContractError",
    "shown",
]

# How a value is echoed in an error: bounded, so that a huge value (a YAML alias bomb expands a
# 600-byte file to billions of items) costs a line, not gigabytes (issue 38, defect 12).
_SHOWN = reprlib.Repr()
_SHOWN.maxlevel = 2
_SHOWN.maxlist = _SHOWN.maxtuple = _SHOWN.maxset = _SHOWN.maxdict = 6
_SHOWN.maxstring = _SHOWN.maxother = 120
_SHOWN.maxlong = 40
_SHOWN_MAX = 200


def shown(value: Any) -> str:
    """``repr(value)`` cut to at most 200 characters: every config error echoes values
    through this.

    >>> shown([[1, 2]] * 100)
    '[[1, 2], [1, 2], [1, 2], [1, 2], [1, 2], [1, 2], ...]'
    """
    text = _SHOWN.repr(value)
    return text if len(text) <= _SHOWN_MAX else text[: _SHOWN_MAX - 3] + "..."


class PresdepError(Exception):
    """Base class of every error this package raises on purpose.

    ``key`` names the config key at fault (``data.top_k``, ``collections[0].name``) when there
    is one; the config loader turns it into the line of the YAML file.
    """

    def __init__(self, *args: object, key: str | None = None) -> None:
        super().__init__(*args)
        self.key = key


class InputFormatError(PresdepError, ValueError):
    """A user file is malformed. The message names the file, the line, what was expected and the fix.

    >>> str(InputFormatError("run.trec", 3, "6 columns", "got 5", "write 'qid Q0 docid rank score tag'"))
    "run.trec:3: expected 6 columns, got 5. Fix: write 'qid Q0 docid rank score tag'"
    """

    def __init__(
        self, path: str | Path, line: int | None, expected: str, got: str, fix: str
    ) -> None:
        self.path = str(path)
        self.line = line
        self.expected = expected
        self.got = got
        self.fix = fix
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: expected {expected}, got {got}. Fix: {fix}")


class ConfigError(PresdepError, ValueError):
    """An experiment config is invalid (unknown key, bad value, ...)."""


class RegistryError(PresdepError, KeyError):
    """An unknown or duplicate name in a registry."""

    def __str__(self) -> str:  # KeyError quotes its message; we want it readable.
        return str(self.args[0]) if self.args else ""


class RerankerContractError(PresdepError, RuntimeError):
    """A reranker broke its contract (candidates lost or reordered, non-finite scores, readout
    fields or cost reported for only some candidates). The message names the reranker."""
