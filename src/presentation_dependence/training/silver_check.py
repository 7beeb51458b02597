"""Is a silver file the one a config makes? Its settings (header) and its content (queries).

A silver file's header records the settings that made it (``config``: :func:`config_key`) and
its calibration map. :func:`setting_differences` names every setting on which a header and a
config's ``silver`` block disagree: ``presdep silver`` refuses to keep such a file and
``presdep train`` refuses to train on it (its labels are not the config's).

The settings name the data by path, so the same settings can meet other content later (an
edited or re-exported data file). :func:`content_problem` compares the queries a file holds
with the ones the data gives now (query id and text, every candidate's id and text, in order:
:func:`~presentation_dependence.runners.fingerprint.request_fingerprint`, as ``presdep run``
compares its per-query results) and, for a teacher that reads the data's judgements (the gold
teacher, ``qrels: data``), those judgements (``judgements_sha256`` in the header). The order of
the queries is not compared: the file keeps its own.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from presentation_dependence.data.config import DataConfig
from presentation_dependence.errors import PresdepError
from presentation_dependence.fields import build_dataclass, to_plain
from presentation_dependence.records import Qrels, Query, RerankRequest
from presentation_dependence.rerankers.base import reranker_block
from presentation_dependence.runners.fingerprint import describe_difference, request_fingerprint
from presentation_dependence.secrets import redact_obj
from presentation_dependence.training.calibration import Calibration, CalibrationConfig
from presentation_dependence.training.config import SilverConfig
from presentation_dependence.training.silver_format import SilverQuery

__all__ = [
    "config_key",
    "content_problem",
    "file_calibration",
    "judgements_sha256",
    "setting_differences",
]

_KEYS = ("teacher", "num_orders", "seed", "include_given_order", "data")


def config_key(cfg: SilverConfig) -> dict[str, Any]:
    """The settings a silver file is made with, as its header's ``config`` records them."""
    return {
        "teacher": cfg.teacher,
        "num_orders": cfg.num_orders,
        "seed": cfg.seed,
        "include_given_order": cfg.include_given_order,
        "data": to_plain(cfg.data),
    }


def _plain(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str, sort_keys=True))


def _teacher(block: Any) -> Any:
    """A stored teacher block with today's defaults filled in (as the config's is)."""
    try:
        return _plain(reranker_block(block, "silver.teacher"))
    except PresdepError:
        return _plain(block)


def _data(blocks: Any) -> Any:
    """Stored data blocks with today's defaults filled in (as the config's are)."""
    try:
        return _plain([to_plain(build_dataclass(DataConfig, b, "silver.data")) for b in blocks])
    except (PresdepError, TypeError):
        return _plain(blocks)


_NORMALISE = {"teacher": _teacher, "data": _data}


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 100 else text[:97] + "..."


def file_calibration(header: Mapping[str, Any]) -> CalibrationConfig:
    """The settings of a file's calibration map (identity when the header has none; the reader
    has refused an unreadable one)."""
    raw = header.get("calibration")
    return CalibrationConfig() if raw is None else Calibration.from_dict(raw).config


def setting_differences(
    header: Mapping[str, Any],
    cfg: SilverConfig,
    *,
    data: bool = True,
    calibration: bool = False,
) -> list[str]:
    """``silver.<key>: <file's> in the file, <config's> in the config`` for every setting the
        header and ``cfg`` disagree on (the stored teacher and data blocks read with today's defaults,
    so an option added since does not orphan a file). A header without ``config`` (a file made before it was
        recorded, or by hand) is compared on the keys it holds. ``data=False`` leaves the data
        blocks out; ``calibration=True`` compares the calibration map's settings too."""
    stored = header.get("config")
    if not isinstance(stored, Mapping):
        skip = {"num_orders"} if header.get("order_free") else set()
        stored = {k: header[k] for k in _KEYS if k in header and k not in skip}
    now = redact_obj(config_key(cfg))  # the header holds the redacted settings
    out = []
    for key in _KEYS:
        if key not in stored or (key == "data" and not data):
            continue
        old = _NORMALISE.get(key, _plain)(stored[key])
        new = _plain(now[key])
        if old != new:
            out.append(f"silver.{key}: {_short(old)} in the file, {_short(new)} in the config")
    if calibration and file_calibration(header) != cfg.calibration:
        old, new = to_plain(file_calibration(header)), to_plain(cfg.calibration)
        out.append(f"silver.calibration: {_short(old)} in the file, {_short(new)} in the config")
    return out


def judgements_sha256(judgements: Qrels | None) -> str | None:
    """sha256 of a judgement set, parsed (the order of its lines does not count)."""
    if judgements is None:
        return None
    items = sorted(
        (q, d, int(g)) for q, docs in judgements.judgements.items() for d, g in docs.items()
    )
    return hashlib.sha256(json.dumps(items).encode("utf-8")).hexdigest()


def _query_problem(stored: SilverQuery, req: RerankRequest) -> str | None:
    kept = RerankRequest(Query(stored.qid, stored.query), stored.candidates)
    if request_fingerprint(kept) == request_fingerprint(req):
        return None
    if [c.docid for c in kept.candidates] != [c.docid for c in req.candidates]:
        return "its candidate ids differ"
    texts = {c.docid: c.text for c in stored.candidates}
    return describe_difference(req, stored.query, texts) or "its query or passage texts differ"


def content_problem(
    header: Mapping[str, Any],
    queries: Sequence[SilverQuery],
    requests: Sequence[tuple[str, RerankRequest]],
    judgements: Mapping[str, Qrels | None],
) -> str | None:
    """What differs between a file's queries and the ``(source, request)`` pairs the data
    gives now (None: nothing), the first such query named."""
    have = {q.key: q for q in queries}
    want = {f"{source}/{req.query.qid}": req for source, req in requests}
    missing = [k for k in want if k not in have]
    extra = [k for k in have if k not in want]
    for keys, what in ((missing, "the data now gives"), (extra, "the data no longer gives")):
        if keys:
            more = f" and {len(keys) - 1} more" if len(keys) > 1 else ""
            verb = "the file lacks" if keys is missing else "the file still holds"
            return f"{what} query {keys[0]}{more}, which {verb}"
    changed = [(k, p) for k, req in want.items() if (p := _query_problem(have[k], req))]
    if changed:
        more = f" ({len(changed) - 1} more queries changed)" if len(changed) > 1 else ""
        return f"query {changed[0][0]}: {changed[0][1]}{more}"
    stored = header.get("judgements_sha256")
    if isinstance(stored, Mapping):
        for source, sha in stored.items():
            if source in judgements and judgements_sha256(judgements[source]) != sha:
                return f"the judgements of {source} (which the teacher reads) changed"
    return None
