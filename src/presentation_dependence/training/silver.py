"""Silver labels: a teacher's continuous scores for every training query, under T presentations.

A teacher is any registered reranker (``silver.teacher``). For every query of ``silver.data``
the generator draws T presentations with the rule batched self-consistency uses
(:func:`~presentation_dependence.rerankers.self_consistency.presentations`: seeded by
``[seed, crc32(qid)]``), scores each with ``teacher.rank()`` and stores the scores aligned by
candidate. The mean over the T orders is therefore exactly what
``BatchedSelfConsistencyReranker(base=teacher, num_orders=T, seed=seed)`` gives (tested): the
default self-distillation teacher. The format (``docs/TRAINING.md``, ``presdep-silver/1``):

* line 1, the header: ``format``, ``teacher`` (the block), ``teacher_describe``, ``teacher_id``,
  ``teacher_revision``, ``num_orders`` (T), ``seed``, ``include_given_order``, ``data`` (the
  data blocks), ``num_queries``, ``provenance``;
* one line per query: ``source`` (data set name), ``qid``, ``query``, ``candidates``
  (``docid``, ``text``, ``rank``), ``presentations`` (T lists of input positions: slot j shows
  candidate ``presentations[t][j]``), ``order_scores`` (T lists of n scores, aligned by
  candidate), ``scores`` (their mean), ``order_grade_probs`` (T × n × G when the teacher
  reports P(g), else absent), ``teacher_id``, ``teacher_revision``.

Nothing in it depends on the teacher being local: a hosted teacher (an API reranker) fills the
same fields, and per-line ``teacher_id`` lets files of several teachers be trained on together.
Generation is resumable: each finished query is written atomically to ``<path>.parts/`` and the
final file is assembled atomically once all are done.
"""

from __future__ import annotations

import json
import logging
import shutil
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from presentation_dependence.config.build import to_plain
from presentation_dependence.config.experiment import RerankerConfig
from presentation_dependence.data import load_dataset
from presentation_dependence.errors import ConfigError, InputFormatError
from presentation_dependence.io.atomic import atomic_write_text
from presentation_dependence.provenance import collect_provenance
from presentation_dependence.records import Candidate, RerankRequest
from presentation_dependence.rerankers import Reranker, build_reranker
from presentation_dependence.rerankers.self_consistency import presentations
from presentation_dependence.training.config import SilverConfig

__all__ = [
    "SILVER_FORMAT",
    "SilverQuery",
    "SilverSet",
    "generate_silver",
    "read_silver",
    "score_query",
    "teacher_identity",
]

log = logging.getLogger(__name__)

SILVER_FORMAT = "presdep-silver/1"


@dataclass(frozen=True)
class SilverQuery:
    """One training query with its teacher scores under T presentations."""

    source: str
    qid: str
    query: str
    candidates: tuple[Candidate, ...]
    presentations: np.ndarray  # (T, n) int: slot j of order t shows candidate [t, j]
    order_scores: np.ndarray  # (T, n) float: candidate-aligned teacher scores
    teacher_id: str
    teacher_revision: str | None = None
    order_grade_probs: np.ndarray | None = None  # (T, n, G)

    @property
    def key(self) -> str:
        return f"{self.source}/{self.qid}"

    @property
    def num_orders(self) -> int:
        return int(self.order_scores.shape[0])

    def labels(self, teacher_orders: int) -> np.ndarray:
        """The mean teacher score over the first ``teacher_orders`` orders, per candidate."""
        if not 1 <= teacher_orders <= self.num_orders:
            raise ConfigError(
                f"silver query {self.key}: {teacher_orders} teacher orders asked, "
                f"{self.num_orders} stored"
            )
        return np.asarray(self.order_scores[:teacher_orders].mean(axis=0), dtype=np.float64)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "source": self.source,
            "qid": self.qid,
            "query": self.query,
            "candidates": [
                {"docid": c.docid, "text": c.text, "rank": c.rank} for c in self.candidates
            ],
            "presentations": self.presentations.tolist(),
            "order_scores": self.order_scores.tolist(),
            "scores": self.order_scores.mean(axis=0).tolist(),
            "teacher_id": self.teacher_id,
            "teacher_revision": self.teacher_revision,
        }
        if self.order_grade_probs is not None:
            d["order_grade_probs"] = self.order_grade_probs.tolist()
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SilverQuery:
        cands = tuple(
            Candidate(str(c["docid"]), str(c["text"]), int(c["rank"])) for c in d["candidates"]
        )
        pres = np.asarray(d["presentations"], dtype=np.int64)
        scores = np.asarray(d["order_scores"], dtype=np.float64)
        n = len(cands)
        if pres.ndim != 2 or pres.shape[1] != n or scores.shape != pres.shape:
            raise ValueError(
                f"presentations {pres.shape} / order_scores {scores.shape} do not match "
                f"{n} candidates"
            )
        probs = d.get("order_grade_probs")
        return cls(
            source=str(d["source"]),
            qid=str(d["qid"]),
            query=str(d["query"]),
            candidates=cands,
            presentations=pres,
            order_scores=scores,
            teacher_id=str(d["teacher_id"]),
            teacher_revision=d.get("teacher_revision"),
            order_grade_probs=None if probs is None else np.asarray(probs, dtype=np.float64),
        )


@dataclass(frozen=True)
class SilverSet:
    """The queries of one or more silver files, with each file's header."""

    headers: tuple[dict[str, Any], ...]
    queries: tuple[SilverQuery, ...]

    @property
    def num_orders(self) -> int:
        return min(q.num_orders for q in self.queries)


def teacher_identity(describe: Mapping[str, Any]) -> tuple[str, str | None]:
    """``(teacher_id, revision)`` from a reranker's ``describe()``: class plus model, and the
    model revision (looked up in a wrapper's ``base`` too)."""
    node: Mapping[str, Any] | None = describe
    model = revision = None
    while node is not None and model is None:
        model, revision = node.get("model_name"), node.get("revision")
        base = node.get("base")
        node = base if isinstance(base, Mapping) else None
    cls = str(describe.get("reranker_class", "?"))
    tid = f"{cls}:{model}" if model else cls
    if describe.get("adapter_sha256"):
        tid += f"+adapter:{str(describe['adapter_sha256'])[:16]}"
    return tid, None if revision is None else str(revision)


def score_query(
    teacher: Reranker,
    request: RerankRequest,
    *,
    num_orders: int,
    seed: int,
    include_given_order: bool,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """``(presentations (T, n), candidate-aligned scores (T, n), P(g) (T, n, G) or None)``."""
    cands = list(request.candidates)
    n = len(cands)
    orders = presentations(
        n,
        request.query.qid,
        num_orders=num_orders,
        seed=seed,
        include_given_order=include_given_order,
    )
    scores = np.zeros((len(orders), n), dtype=np.float64)
    probs: list[list[Any]] = []
    for t, order in enumerate(orders):
        res = teacher.rank(request.query, [cands[i] for i in order])
        if [it.candidate.docid for it in res.items] != [cands[i].docid for i in order]:
            raise RuntimeError(f"the teacher broke the input order of query {request.query.qid}")
        row: list[Any] = [None] * n
        for i, it in zip(order, res.items, strict=True):
            scores[t, i] = it.score
            row[i] = it.details.get("grade_probs")
        probs.append(row)
    have_probs = all(p is not None for row in probs for p in row)
    arr = np.asarray(probs, dtype=np.float64) if have_probs else None
    return np.asarray(orders, dtype=np.int64), scores, arr


def _config_key(cfg: SilverConfig) -> dict[str, Any]:
    return {
        "teacher": cfg.teacher,
        "num_orders": cfg.num_orders,
        "seed": cfg.seed,
        "include_given_order": cfg.include_given_order,
        "data": to_plain(cfg.data),
    }


def _requests(cfg: SilverConfig) -> list[tuple[str, RerankRequest]]:
    if not cfg.data:
        raise ConfigError("silver.data is empty: name the training queries (a list of data blocks)")
    out: list[tuple[str, RerankRequest]] = []
    seen: set[str] = set()
    for block in cfg.data:
        ds = load_dataset(block)
        for req in ds.requests:
            key = f"{ds.name}/{req.query.qid}"
            if key in seen:
                raise ConfigError(f"silver.data: query {key} appears twice")
            seen.add(key)
            out.append((ds.name, req))
    return out


def _part_matches(line: str, source: str, req: RerankRequest) -> bool:
    """A finished part is reused only for the same query and candidates (the data file under
    an unchanged data block may have changed since)."""
    try:
        d = json.loads(line)
        docids = [str(c["docid"]) for c in d["candidates"]]
    except (ValueError, KeyError, TypeError):
        return False
    return (
        d.get("source") == source
        and d.get("qid") == req.query.qid
        and docids == [c.docid for c in req.candidates]
    )


def generate_silver(
    cfg: SilverConfig,
    *,
    argv: Sequence[str] | None = None,
    force: bool = False,
    teacher: Reranker | None = None,
) -> Path:
    """Score every query of ``cfg.data`` with the teacher; write ``cfg.path`` atomically.

    An existing file made with the same teacher, T, seed and data is kept (``force`` remakes
    it); one made otherwise is an error. Finished queries survive an interruption.
    """
    path = Path(cfg.path)
    key = _config_key(cfg)
    if path.exists() and not force:
        header = read_silver(path).headers[0]
        if header.get("config") == key:
            log.info("%s already holds these silver labels; --force remakes them", path)
            return path
        raise ConfigError(
            f"{path} holds silver labels made with another teacher, T, seed or data. "
            "Fix: point silver.path elsewhere or pass --force to remake it"
        )
    parts = path.with_name(path.name + ".parts")
    parts.mkdir(parents=True, exist_ok=True)
    key_file = parts / "config.json"
    if key_file.exists() and json.loads(key_file.read_text(encoding="utf-8")) != key:
        shutil.rmtree(parts)
        parts.mkdir(parents=True)
    atomic_write_text(key_file, json.dumps(key, sort_keys=True) + "\n")
    requests = _requests(cfg)
    if teacher is None:
        rc = RerankerConfig.from_raw(cfg.teacher)
        teacher = build_reranker(rc.reranker_class, rc.options)
    describe = teacher.describe()
    tid, revision = teacher_identity(describe)
    t0 = time.perf_counter()
    records: list[str] = []
    for idx, (source, req) in enumerate(requests):
        part = parts / f"{idx:06d}.json"
        if part.exists():
            line = part.read_text(encoding="utf-8").strip()
            if _part_matches(line, source, req):
                records.append(line)
                continue
            log.warning(
                "%s holds another query than %s/%s: scoring again", part, source, req.query.qid
            )
        pres, scores, probs = score_query(
            teacher,
            req,
            num_orders=cfg.num_orders,
            seed=cfg.seed,
            include_given_order=cfg.include_given_order,
        )
        sq = SilverQuery(
            source,
            req.query.qid,
            req.query.text,
            req.candidates,
            pres,
            scores,
            tid,
            revision,
            probs,
        )
        line = json.dumps(sq.to_dict(), ensure_ascii=False)
        atomic_write_text(part, line + "\n")
        records.append(line)
        log.info(
            "silver %d/%d: %s (%d candidates x %d orders), %.0f s so far",
            idx + 1,
            len(requests),
            sq.key,
            len(req.candidates),
            cfg.num_orders,
            time.perf_counter() - t0,
        )
    header = {
        "format": SILVER_FORMAT,
        "config": key,
        "teacher": cfg.teacher,
        "teacher_describe": describe,
        "teacher_id": tid,
        "teacher_revision": revision,
        "num_orders": cfg.num_orders,
        "seed": cfg.seed,
        "include_given_order": cfg.include_given_order,
        "presentation_rule": "rerankers.self_consistency.presentations(n, qid, num_orders=T, "
        "seed=seed, include_given_order=...)",
        "data": to_plain(cfg.data),
        "num_queries": len(records),
        "provenance": collect_provenance(argv=argv, seeds={"silver_seed": cfg.seed}),
    }
    text = json.dumps(header, ensure_ascii=False, default=str) + "\n" + "\n".join(records) + "\n"
    atomic_write_text(path, text)
    shutil.rmtree(parts, ignore_errors=True)
    log.info("wrote %s: %d queries, T=%d, teacher %s", path, len(records), cfg.num_orders, tid)
    return path


def _read_one(path: Path) -> tuple[dict[str, Any], list[SilverQuery]]:
    fix = "make it with scripts/train/make_silver.py (format in docs/TRAINING.md)"
    if not path.is_file():
        raise ConfigError(f"silver file not found: {path}. Fix: {fix}")
    lines = path.read_text(encoding="utf-8").splitlines()
    if not lines:
        raise InputFormatError(path, 1, "a header line", "an empty file", fix)
    try:
        header = json.loads(lines[0])
    except ValueError as e:
        raise InputFormatError(path, 1, "a JSON header", str(e), fix) from None
    if not isinstance(header, dict) or header.get("format") != SILVER_FORMAT:
        got = header.get("format") if isinstance(header, dict) else type(header).__name__
        raise InputFormatError(path, 1, f"format {SILVER_FORMAT!r}", repr(got), fix)
    queries = []
    for no, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        try:
            queries.append(SilverQuery.from_dict(json.loads(line)))
        except (ValueError, KeyError, TypeError) as e:
            raise InputFormatError(
                path, no, "a silver query record", f"{type(e).__name__}: {e}", fix
            ) from None
    return header, queries


def read_silver(paths: str | Path | Iterable[str | Path]) -> SilverSet:
    """Read one silver file or several (their queries concatenated; keys must be unique)."""
    items = [paths] if isinstance(paths, (str, Path)) else list(paths)
    headers, queries, seen = [], [], set()
    for p in items:
        header, qs = _read_one(Path(p))
        headers.append(header)
        for q in qs:
            if q.key in seen:
                raise ConfigError(f"silver query {q.key} appears in more than one record ({p})")
            seen.add(q.key)
            queries.append(q)
    if not queries:
        raise ConfigError(f"no silver queries in {', '.join(map(str, items))}")
    return SilverSet(tuple(headers), tuple(queries))
