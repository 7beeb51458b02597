"""A silver file's teacher scores without its texts (format ``presdep-silver-scores/1``).

A silver file holds the training queries' and passages' texts beside the teacher's scores. The
texts stay out of git (the pool's licences), and making the scores is the expensive part: the E5
teacher over the pool's 821 training queries is a pass over every passage, and a session's
machine is not kept. ``silver.scores_archive`` names a file that keeps the scores only, one line
per query after a header:

* header: ``format``, ``config`` (the settings that made the scores, as a silver file's header
  holds them: teacher, T, seed, given order, data blocks), ``teacher_id``, ``teacher_revision``,
  ``num_queries``, and the ``provenance`` of the silver file it was taken from;
* each line: the silver record (:meth:`SilverQuery.to_dict`) without the query text, without the
  passage texts (``candidates`` is the list of ids, in order) and without the ``scores`` mean.

:func:`presentation_dependence.training.silver.generate_silver` reads it where it exists: a query
whose key, candidate ids, drawn presentations and teacher identity match takes the stored scores
instead of a teacher pass (its texts come from the data, as always); any other query is scored
by the teacher. An archive made with other settings is refused, naming them. Once the silver file
is complete the archive is (re)written from it, atomically and only when a record changed, so a
committed archive makes the file on the next machine without a teacher pass, with the very
scores of the machine that computed them (a training resumed there meets the same data
fingerprint).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from presentation_dependence.errors import ConfigError, InputFormatError
from presentation_dependence.io.atomic import atomic_write_text
from presentation_dependence.records import RerankRequest
from presentation_dependence.training.config import SilverConfig
from presentation_dependence.training.silver_check import setting_differences
from presentation_dependence.training.silver_format import SilverQuery

__all__ = [
    "SCORES_FORMAT",
    "from_archive",
    "read_scores_archive",
    "text_free",
    "write_scores_archive",
]

SCORES_FORMAT = "presdep-silver-scores/1"
_HEADER_KEYS = ("config", "teacher_id", "teacher_revision", "num_orders", "order_free", "seed")


def text_free(record: Mapping[str, Any]) -> dict[str, Any]:
    """A silver record without its texts: ``candidates`` as ids, no ``query``, no ``scores``."""
    out = {k: v for k, v in record.items() if k not in ("query", "scores", "candidates")}
    out["candidates"] = [str(c["docid"]) for c in record["candidates"]]
    return out


def read_scores_archive(path: Path, cfg: SilverConfig) -> dict[str, dict[str, Any]]:
    """The archive's records by ``source/qid``; an archive made with other settings than
    ``cfg`` (or not an archive) is refused, naming the file and the fix."""
    lines = path.read_text(encoding="utf-8").splitlines()
    try:
        header = json.loads(lines[0]) if lines else {}
    except json.JSONDecodeError as exc:
        header = {"format": f"not JSON ({exc.msg})"}
    if not isinstance(header, dict) or header.get("format") != SCORES_FORMAT:
        got = header.get("format") if isinstance(header, dict) else header
        raise InputFormatError(
            path,
            1,
            f"a silver scores archive's header (format {SCORES_FORMAT!r})",
            repr(got),
            "point silver.scores_archive at such an archive, or at a path that does not exist "
            "yet (it is written there once the silver file is made)",
        )
    diffs = setting_differences(header, cfg)
    if diffs:
        raise ConfigError(
            f"{path} holds teacher scores made with other settings ({'; '.join(diffs)}). Fix: "
            "point silver.scores_archive at a new path (it is written there once the silver "
            "file is made), or delete the stale archive"
        )
    out: dict[str, dict[str, Any]] = {}
    for i, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
            key = f"{d['source']}/{d['qid']}"
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise InputFormatError(
                path,
                i,
                "a scores record (JSON with source and qid)",
                str(exc),
                "delete the archive; the next silver run scores the queries and writes it again",
            ) from exc
        out[key] = d
    return out


def from_archive(
    stored: Mapping[str, Any],
    source: str,
    req: RerankRequest,
    orders: Sequence[Sequence[int]],
    teacher: tuple[str, str | None],
) -> SilverQuery | None:
    """The silver query of ``req`` with the archived scores, or None where the archive does not
    hold this query's scores: other candidate ids, other presentations than ``orders`` (the
    ones the generator draws now), another teacher identity ``(teacher_id, revision)``."""
    ids = [c.docid for c in req.candidates]
    same = (
        stored.get("candidates") == ids
        and stored.get("presentations") == [list(o) for o in orders]
        and (stored.get("teacher_id"), stored.get("teacher_revision")) == teacher
    )
    if not same:
        return None
    record = {
        **stored,
        "source": source,
        "qid": req.query.qid,
        "query": req.query.text,
        "candidates": [{"docid": c.docid, "text": c.text, "rank": c.rank} for c in req.candidates],
    }
    return SilverQuery.from_dict(record)


def write_scores_archive(archive: Path, silver: Path) -> bool:
    """Write ``archive`` from the complete silver file ``silver`` (its header's settings and
    provenance, every record text-free) when a record differs from what it holds; whether it
    wrote."""
    header, *records = [ln for ln in silver.read_text(encoding="utf-8").splitlines() if ln]
    body = [json.dumps(text_free(json.loads(r)), ensure_ascii=False) for r in records]
    if archive.exists() and _body(archive) == body:
        return False
    head = json.loads(header)
    out = {"format": SCORES_FORMAT, **{k: head.get(k) for k in _HEADER_KEYS}}
    out.update(num_queries=len(body), made_from=silver.name, provenance=head.get("provenance"))
    archive.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(archive, "\n".join([json.dumps(out, ensure_ascii=False), *body]) + "\n")
    return True


def _body(archive: Path) -> Sequence[str]:
    return [ln for ln in archive.read_text(encoding="utf-8").splitlines()[1:] if ln]
