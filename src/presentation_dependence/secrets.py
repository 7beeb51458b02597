"""Keep secrets (HF_TOKEN, API keys) out of logs, run folders and resolved configs.

Every text the runners write into a run folder, and every log record, passes through
:func:`redact`, which replaces the value of any environment variable whose *name* looks like a
secret (contains TOKEN, KEY, SECRET, PASSWORD or CREDENTIAL) with ``<redacted:NAME>``.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping

__all__ = ["RedactingFilter", "redact", "secret_values"]

_SECRET_NAME = re.compile(r"TOKEN|KEY|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
_MIN_LEN = 6  # shorter values ("1", "true") would redact ordinary text


def secret_values(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """``{value: NAME}`` for every secret-looking environment variable, longest values first."""
    env = os.environ if environ is None else environ
    found = {v: k for k, v in env.items() if _SECRET_NAME.search(k) and len(v) >= _MIN_LEN}
    return dict(sorted(found.items(), key=lambda kv: -len(kv[0])))


def redact(text: str, environ: Mapping[str, str] | None = None) -> str:
    """``text`` with every secret value replaced by ``<redacted:NAME>``."""
    for value, name in secret_values(environ).items():
        if value in text:
            text = text.replace(value, f"<redacted:{name}>")
    return text


class RedactingFilter(logging.Filter):
    """A logging filter that redacts secrets from the formatted message."""

    def filter(self, record: logging.LogRecord) -> bool:
        msg = record.getMessage()
        clean = redact(msg)
        if clean != msg:
            record.msg, record.args = clean, None
        return True
