"""Content fingerprints: a finished result is reused only for the very input it was computed from.

A run folder's config names its data by *path* (with alternatives), so the same config can read
other content later: a re-exported file, a fetched ``data/`` folder that now wins over
``../shared/data/``. Every per-query result therefore stores :func:`request_fingerprint` of its
request (the query id and text, and every candidate's id and text, in order) under
:data:`FINGERPRINT_KEY`, and a rerun compares it before reusing the result
(:func:`reuse_problem`). The judgement set is checked the same way by the experiment runner
(``qrels.txt`` against the judgements the data now gives).

:func:`resolved_data_paths` says which alternative each ``data`` path field resolved to; it is
recorded in ``resolved_config.yaml`` and in each invocation's provenance.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from presentation_dependence.data.config import DataConfig, resolve_path
from presentation_dependence.errors import ConfigError
from presentation_dependence.records import RerankRequest

__all__ = [
    "FINGERPRINT_KEY",
    "PATH_FIELDS",
    "describe_difference",
    "request_fingerprint",
    "resolved_data_paths",
    "reuse_problem",
]

FINGERPRINT_KEY = "request_sha256"
PATH_FIELDS = ("path", "run", "corpus", "topics", "qrels")


def request_fingerprint(req: RerankRequest) -> str:
    """sha256 of the query id and text and each candidate's id and text, in order."""
    blob = json.dumps(
        [req.query.qid, req.query.text, [[c.docid, c.text] for c in req.candidates]],
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def describe_difference(
    req: RerankRequest, query_text: str | None, texts: Mapping[str, Any] | None
) -> str | None:
    """What differs between ``req`` and a stored query text / ``{docid: text}`` (None: nothing
    that can be told from what was stored)."""
    if query_text is not None and query_text != req.query.text:
        return "the query text differs"
    if texts:
        diff = [c.docid for c in req.candidates if texts.get(c.docid) != c.text]
        if diff:
            more = f" (and {len(diff) - 1} more)" if len(diff) > 1 else ""
            return f"the passage text of {diff[0]!r} differs{more}"
    return None


def reuse_problem(
    req: RerankRequest,
    docids: list[str],
    fingerprint: str | None,
    *,
    query_text: str | None = None,
    texts: Mapping[str, Any] | None = None,
) -> str | None:
    """Why a stored result cannot be reused for ``req`` (None: it can).

    ``fingerprint`` None is a result written before fingerprints existed: its candidate ids,
    and the query and passage texts when stored, are compared instead.
    """
    if docids != [c.docid for c in req.candidates]:
        return "the candidate ids differ"
    if fingerprint is None:
        return describe_difference(req, query_text, texts)
    if fingerprint == request_fingerprint(req):
        return None
    return describe_difference(req, query_text, texts) or "the query or passage texts differ"


def resolved_data_paths(data: DataConfig) -> dict[str, str]:
    """``{field: absolute path}`` for each set path field of ``data`` that resolves."""
    out: dict[str, str] = {}
    for key in PATH_FIELDS:
        try:
            path = resolve_path(getattr(data, key), key, required=False)
        except ConfigError:
            continue  # the loader reports it (when it needs the field)
        if path is not None:
            out[key] = str(Path(path).resolve())
    return out
