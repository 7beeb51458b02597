"""Keep secrets (HF_TOKEN, API keys) out of logs, run folders and resolved configs.

A *secret* is the value of an environment variable whose name has a part (split at ``_``)
TOKEN, KEY, SECRET, PASSWORD, PASSWD, CREDENTIAL(S), APIKEY or AUTH (``HF_TOKEN``,
``OPENAI_API_KEY``, ``AWS_SECRET_ACCESS_KEY``; not ``MY_KEYRING_PROVIDER`` or
``TOKENIZERS_PARALLELISM``) and whose value looks like a credential: at least
:data:`MIN_CREDENTIAL_LEN` characters, no whitespace, not a path. Ordinary values such as
``smoke-1`` or ``false`` are never treated as secrets, so identifiers in data cannot be hit.

Two rules, by what is written:

* Logs, configs, provenance and command lines (texts that *describe* a run) pass through
  :func:`redact` / :func:`redact_obj`, which replace a secret with ``<redacted:NAME>``.
* Result records (per-query results, run files, judgements, metrics, file names) are *never*
  rewritten: a rewritten qid or score is a silently wrong result. :func:`refuse_secret` instead
  raises :class:`SecretInOutputError` (naming the variable, never the value) before such a record
  is written, so a secret that reached the data stops the run.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from typing import Any

from presentation_dependence.errors import PresdepError

__all__ = [
    "MIN_CREDENTIAL_LEN",
    "RedactingFilter",
    "RedactingFormatter",
    "SecretInOutputError",
    "find_secret",
    "looks_like_credential",
    "redact",
    "redact_obj",
    "refuse_secret",
    "secret_values",
]

_SECRET_PARTS = frozenset(
    {"TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "CREDENTIALS", "APIKEY", "AUTH"}
)
MIN_CREDENTIAL_LEN = 12  # API keys and hub tokens are far longer; identifiers rarely are


class SecretInOutputError(PresdepError):
    """A secret's value would be written into a result record or a file name."""


def _secret_name(name: str) -> bool:
    return any(part in _SECRET_PARTS for part in name.upper().split("_"))


def looks_like_credential(value: str) -> bool:
    """Long enough, one token (no whitespace), and not a file-system path."""
    return (
        len(value) >= MIN_CREDENTIAL_LEN
        and not any(ch.isspace() for ch in value)
        and not value.startswith(("/", "~", "./", "../"))
        and not re.match(r"^[A-Za-z]:[\\/]", value)
    )


def secret_values(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """``{value: NAME}`` for every secret in the environment, longest values first."""
    env = os.environ if environ is None else environ
    found = {v: k for k, v in env.items() if _secret_name(k) and looks_like_credential(v)}
    return dict(sorted(found.items(), key=lambda kv: -len(kv[0])))


def redact(text: str, environ: Mapping[str, str] | None = None) -> str:
    """``text`` with every secret value replaced by ``<redacted:NAME>``."""
    for value, name in secret_values(environ).items():
        if value in text:
            text = text.replace(value, f"<redacted:{name}>")
    return text


def redact_obj(obj: Any, environ: Mapping[str, str] | None = None) -> Any:
    """A copy of a JSON-like ``obj`` with :func:`redact` applied to every string in it."""
    if isinstance(obj, str):
        return redact(obj, environ)
    if isinstance(obj, Mapping):
        return {redact_obj(k, environ): redact_obj(v, environ) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [redact_obj(v, environ) for v in obj]
    return obj


def find_secret(text: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The name of a variable whose secret value occurs in ``text``, else ``None``."""
    for value, name in secret_values(environ).items():
        if value in text:
            return name
    return None


def refuse_secret(text: str, where: str) -> None:
    """Raise :class:`SecretInOutputError` when a secret occurs in ``text`` (about to be written
    to ``where``). Results are refused, never rewritten (see the module docstring)."""
    name = find_secret(text)
    if name is not None:
        where = redact(where)
        raise SecretInOutputError(
            f"the value of ${name} occurs in {where}; result records are never redacted (that "
            f"would silently change them), so nothing was written. Fix: remove the secret from "
            f"the data or unset ${name} for this run"
        )


class RedactingFilter(logging.Filter):
    """A logging filter that redacts secrets from the formatted message."""

    def filter(self, record: logging.LogRecord) -> bool:
        msg = record.getMessage()
        clean = redact(msg)
        if clean != msg:
            record.msg, record.args = clean, None
        return True


class RedactingFormatter(logging.Formatter):
    """A formatter whose whole output (message, traceback, stack) is redacted."""

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))
