"""Exceptions that tell the user where the problem is and how to fix it."""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "ConfigError",
    "InputFormatError",
    "PresdepError",
    "RegistryError",
    "RerankerContractError",
]


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
