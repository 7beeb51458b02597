"""Silver labels: a teacher's continuous scores for every training query, under T presentations.

A teacher is any registered reranker (``silver.teacher``). For every query of ``silver.data``
the generator draws T presentations with the rule batched self-consistency uses
(:func:`~presentation_dependence.presentations.draw_orders`: seeded by
``[seed, crc32(qid)]``), scores each with ``teacher.rank()`` and stores the scores aligned by
candidate. The mean over the T orders is therefore exactly what
``BatchedSelfConsistencyReranker(base=teacher, num_orders=T, seed=seed)`` gives (tested): the
default self-distillation teacher. The format (``docs/TRAINING-RUNS.md``, ``presdep-silver/1``):

* line 1, the header: ``format``, ``teacher`` (the block), ``teacher_describe``, ``teacher_id``,
  ``teacher_revision``, ``num_orders`` (T, or 1 for an order-free teacher), ``order_free``,
  ``seed``, ``include_given_order``, ``calibration`` (the fitted map, below), ``data`` (the
  data blocks), ``judgements_sha256`` (per data block, only for a teacher that reads the data's
  judgements), ``num_queries``, ``provenance``;
* one line per query: ``source`` (data set name), ``qid``, ``query``, ``candidates``
  (``docid``, ``text``, ``rank``), ``presentations`` (T lists of input positions: slot j shows
  candidate ``presentations[t][j]``), ``order_scores`` (T lists of n raw teacher scores,
  aligned by candidate), ``scores`` (their mean), ``order_grade_probs`` (T × n × G when the
  teacher reports P(g), else absent), ``teacher_id``, ``teacher_revision``, and
  ``order_free: true`` for an order-free teacher.

Order-free teachers: a teacher whose paradigm is pointwise or identity scores a candidate the
same in every presentation (by construction; the contract suite checks it bit for bit), so one
pass is the exact score and T passes would repeat it. Such a teacher is scored once per query,
in the given order, and the line holds that one row with ``order_free: true``;
:meth:`SilverQuery.labels` returns it for every T, so an order-averaged student can train on it.

Calibration: the labels are the raw scores passed through the map of
:mod:`~presentation_dependence.training.calibration` (``silver.calibration``: identity, cdf or
affine), fitted once on every raw score in the file (the training candidates, by construction)
and stored in the header. :meth:`SilverQuery.labels` is calibrated, ``raw_labels`` is not. A
file whose header has no ``calibration`` (made before it existed) reads as identity. Changing
only ``silver.calibration`` refits the map from the stored raw scores without re-scoring.

Nothing in it depends on the teacher being local: a hosted teacher (an API reranker) fills the
same fields, and per-line ``teacher_id`` lets files of several teachers be trained on together.
Secrets (as a run folder treats them): the header describes the labels and is redacted like
``provenance.json`` (its command line included); the records are results, so a query or passage
text holding a secret is refused before its part or the file is written.
Teacher scores archived without texts (``silver.scores_archive``, :mod:`.silver_scores`) are
reused for the queries they match and written once the file is complete.
Generation is resumable: each finished query is written atomically to ``<path>.parts/`` and the
final file is assembled atomically once all are done. The records and the reader are in
:mod:`~presentation_dependence.training.silver_format` (re-exported here).
"""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from presentation_dependence.data import load_dataset
from presentation_dependence.data.config import data_block_at
from presentation_dependence.errors import ConfigError
from presentation_dependence.fields import to_plain
from presentation_dependence.io.atomic import atomic_write_text
from presentation_dependence.presentations import draw_orders, score_presentations
from presentation_dependence.provenance import collect_provenance
from presentation_dependence.records import Qrels, RerankRequest
from presentation_dependence.rerankers import Paradigm, Reranker, build_reranker
from presentation_dependence.rerankers.base import RerankerConfig
from presentation_dependence.rerankers.gold import GoldQrelsReranker
from presentation_dependence.runners.fingerprint import FINGERPRINT_KEY
from presentation_dependence.runners.run_folder import RunFolder
from presentation_dependence.runners.stage import (
    CONFIG_KEY,
    StoredInput,
    config_fingerprint,
    run_stage,
)
from presentation_dependence.secrets import redact, redact_obj, refuse_secret
from presentation_dependence.training.calibration import (
    Calibration,
    CalibrationConfig,
    fit_calibration,
)
from presentation_dependence.training.config import SilverConfig
from presentation_dependence.training.silver_check import (
    config_key,
    content_problem,
    judgements_sha256,
    setting_differences,
)
from presentation_dependence.training.silver_format import (
    SILVER_FORMAT,
    SilverQuery,
    SilverSet,
    read_silver,
    read_silver_file,
)
from presentation_dependence.training.silver_scores import (
    from_archive,
    read_scores_archive,
    write_scores_archive,
)

__all__ = [
    "SILVER_FORMAT",
    "SilverQuery",
    "SilverSet",
    "SilverStage",
    "generate_silver",
    "is_order_free",
    "read_silver",
    "teacher_identity",
]

log = logging.getLogger(__name__)


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


def is_order_free(teacher: Reranker) -> bool:
    """Whether ``teacher`` scores a candidate alike in every presentation, by construction
    (paradigm pointwise or identity, as ``rerankers/catalog.py`` counts them)."""
    return getattr(teacher, "paradigm", None) in (Paradigm.POINTWISE, Paradigm.IDENTITY)


def _requests(cfg: SilverConfig) -> tuple[list[tuple[str, RerankRequest]], dict[str, Qrels | None]]:
    if not cfg.data:
        raise ConfigError("silver.data is empty: name the training queries (a list of data blocks)")
    out: list[tuple[str, RerankRequest]] = []
    judgements: dict[str, Qrels | None] = {}
    seen: set[str] = set()
    for i, block in enumerate(cfg.data):
        with data_block_at(f"silver.data.{i}"):
            ds = load_dataset(block)
        judgements[ds.name] = ds.qrels
        for req in ds.requests:
            key = f"{ds.name}/{req.query.qid}"
            if key in seen:
                raise ConfigError(f"silver.data: query {key} appears twice")
            seen.add(key)
            out.append((ds.name, req))
    return out, judgements


def _fit(queries: Iterable[SilverQuery], config: CalibrationConfig) -> Calibration:
    """The map fitted on every raw teacher score of the file (all stored orders)."""
    scores = [q.order_scores.ravel() for q in queries]
    return fit_calibration(np.concatenate(scores) if scores else np.zeros(0), config)


def _write(path: Path, header: Mapping[str, Any], records: Sequence[str]) -> None:
    """The header describes the labels: redacted, as ``provenance.json`` is. The records are
    results: a secret in one is refused, never rewritten (:mod:`presentation_dependence.secrets`)."""
    body = "\n".join(records) + "\n"
    refuse_secret(body, str(path))
    atomic_write_text(
        path, redact(json.dumps(header, ensure_ascii=False, default=str)) + "\n" + body
    )


def _recalibrate(path: Path, config: CalibrationConfig) -> Path:
    """Refit the map of an existing file on its stored raw scores; rewrite its header."""
    header, queries = read_silver_file(path)
    cal = _fit(queries, config)
    header = {**header, "calibration": cal.to_dict()}
    records = path.read_text(encoding="utf-8").splitlines()[1:]
    _write(path, header, [r for r in records if r.strip()])
    log.info("%s: refitted the calibration map (%s) on the stored raw scores", path, cal.kind)
    return path


def _kept(path: Path, cfg: SilverConfig) -> Path:
    """``path`` kept: made with ``cfg``'s settings from the data as it is now (its calibration
    map refitted when only ``cfg.calibration`` differs); any other file is refused."""
    stored = read_silver(path)
    header = stored.headers[0]
    diffs = setting_differences(header, cfg)
    if diffs:
        raise ConfigError(
            f"{path} holds silver labels made with another teacher, T, seed or data "
            f"({'; '.join(diffs)}). Fix: point silver.path elsewhere or pass --force to remake it"
        )
    requests, judgements = _requests(cfg)
    problem = content_problem(header, stored.queries, requests, judgements)
    if problem is not None:
        raise ConfigError(
            f"{path} holds silver labels made from other data than silver.data gives now "
            f"({problem}). Fix: pass --force to remake them from the data as it is now, or "
            "restore the data they were made from"
        )
    if stored.queries[0].calibration.config != cfg.calibration:
        return _recalibrate(path, cfg.calibration)
    log.info("%s already holds these silver labels; --force remakes them", path)
    return path


def generate_silver(
    cfg: SilverConfig,
    *,
    argv: Sequence[str] | None = None,
    force: bool = False,
    teacher: Reranker | None = None,
    shard: tuple[int, int] | None = None,
) -> Path:
    """Score every query of ``cfg.data`` with the teacher; write ``cfg.path`` atomically.

    An existing file made with the same teacher, T, seed and data blocks, from the very queries
    the data gives now (:mod:`.silver_check`), is kept (``force`` remakes it); when only
    ``cfg.calibration`` differs its map is refitted on the stored raw scores. Any other file is
    an error naming what differs. Finished queries survive an interruption.

    ``shard=(k, n)`` scores only the queries whose index is k mod n and writes their parts,
    never the file: several processes can fill the ``.parts`` folder side by side, and a run
    without a shard (which reuses every finished part) assembles the file.
    """
    if shard is not None and not 0 <= shard[0] < shard[1]:
        raise ConfigError(f"shard must be k/n with 0 <= k < n, got {shard[0]}/{shard[1]}")
    path = Path(cfg.path)
    key = redact_obj(config_key(cfg))  # as the header and the parts' config.json hold it
    if path.exists() and not force:
        return _archived(cfg, _kept(path, cfg))
    parts = _parts_folder(path, key)
    requests, judgements = _requests(cfg)
    if teacher is None:
        rc = RerankerConfig.from_raw(cfg.teacher)
        teacher = build_reranker(rc.reranker_class, rc.options)
    archive = Path(cfg.scores_archive) if cfg.scores_archive else None
    archived = read_scores_archive(archive, cfg) if archive and archive.exists() else {}
    stage = SilverStage(cfg, parts, requests, teacher, judgements, archived)
    if stage.order_free:
        log.info("the teacher %s is order-free: one pass per query (exact for every T)", stage.tid)
    summary = run_stage(
        stage,
        RunFolder(parts),
        stage.keyed,
        desc="silver",
        shard=shard,
        recompute_changed=True,  # a part of another query than the data now gives is redone
        argv=argv,
        seeds={"silver_seed": cfg.seed},
    )
    if shard is not None or not summary.complete:
        log.info("%d parts in %s; run without a shard to write %s", summary.computed, parts, path)
        return path
    if archived:
        log.info("this run took %d queries' scores from %s", stage.reused, archive)
    _assemble(path, stage, key, judgements, argv)
    return _archived(cfg, path)


def _archived(cfg: SilverConfig, path: Path) -> Path:
    """``path``, after writing its text-free scores to ``silver.scores_archive`` (when set and
    a record changed: :mod:`.silver_scores`)."""
    if cfg.scores_archive and write_scores_archive(Path(cfg.scores_archive), path):
        log.info("wrote the teacher scores of %s to %s (commit it)", path, cfg.scores_archive)
    return path


def _parts_folder(path: Path, key: Any) -> Path:
    """``<path>.parts/``, emptied when its ``config.json`` holds another config key; the key
    written there."""
    parts = path.with_name(path.name + ".parts")
    parts.mkdir(parents=True, exist_ok=True)
    key_file = parts / "config.json"
    if key_file.exists() and json.loads(key_file.read_text(encoding="utf-8")) != key:
        shutil.rmtree(parts)
        parts.mkdir(parents=True)
    atomic_write_text(key_file, json.dumps(key, sort_keys=True) + "\n")
    return parts


def _assemble(
    path: Path,
    stage: SilverStage,
    key: Any,
    judgements: Mapping[str, Qrels | None],
    argv: Sequence[str] | None,
) -> None:
    """Write the silver file from every query's part, with the map fitted on all of them;
    delete the parts."""
    cfg = stage.cfg
    parts_text = [stage.path(r.query.qid).read_text(encoding="utf-8") for r in stage.keyed]
    records = [text.split("\n", 1)[0] for text in parts_text]  # line 2: the fingerprints
    queries = [SilverQuery.from_dict(json.loads(r)) for r in records]
    cal = _fit(queries, cfg.calibration)
    header = {
        "format": SILVER_FORMAT,
        "config": key,
        "teacher": cfg.teacher,
        "teacher_describe": stage.describe()["teacher"],
        "teacher_id": stage.tid,
        "teacher_revision": stage.revision,
        "num_orders": stage.T,
        "order_free": stage.order_free,
        "seed": cfg.seed,
        "include_given_order": cfg.include_given_order,
        "presentation_rule": "presentations.draw_orders(n, qid, num_orders=T, "
        "seed=seed, include_given_order=...); an order-free teacher: the given order only",
        "calibration": cal.to_dict(),
        "data": to_plain(cfg.data),
        **_judgements_field(stage, judgements),
        "num_queries": len(records),
        "provenance": collect_provenance(argv=argv, seeds={"silver_seed": cfg.seed}),
    }
    _write(path, header, records)
    shutil.rmtree(stage.parts, ignore_errors=True)
    log.info(
        "wrote %s: %d queries, T=%d, teacher %s, calibration %s",
        path,
        len(records),
        stage.T,
        stage.tid,
        cal.kind,
    )


def _judgements_field(stage: SilverStage, judgements: Mapping[str, Qrels | None]) -> dict[str, Any]:
    """``judgements_sha256`` per data block, for a teacher that reads the data's judgements."""
    if not stage.bound:
        return {}
    return {"judgements_sha256": {s: judgements_sha256(judgements[s]) for s in stage.bound}}


class SilverStage:
    """The ``silver`` stage: one query's teacher scores under T presentations, written to
    ``<path>.parts/<index>.json``; requests are keyed ``source/qid`` (ids repeat across sources)."""

    name = "silver"
    unit = "query"

    def __init__(
        self,
        cfg: SilverConfig,
        parts: Path,
        requests: Sequence[tuple[str, RerankRequest]],
        teacher: Reranker,
        judgements: Mapping[str, Qrels | None],
        archived: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        self.cfg, self.parts, self.teacher = cfg, parts, teacher
        self.archived, self.reused = archived or {}, 0  # stored scores by source/qid
        self.keyed = [
            replace(r, query=replace(r.query, qid=f"{s}/{r.query.qid}")) for s, r in requests
        ]
        self.source = {k.query.qid: sr for k, sr in zip(self.keyed, requests, strict=True)}
        self.index = {k.query.qid: i for i, k in enumerate(self.keyed)}
        self.config_sha256 = config_fingerprint(config_key(cfg))
        # a teacher that reads each data block's own judgements (GoldQrelsReranker, qrels: data)
        self.bound: dict[str, Reranker] = {}
        if isinstance(teacher, GoldQrelsReranker) and teacher.binds_judgements:
            self.bound = {s: teacher.with_judgements(q, s) for s, q in judgements.items()}
        self.tid, self.revision = teacher_identity(teacher.describe())
        self.order_free = is_order_free(teacher)
        self.T = 1 if self.order_free else cfg.num_orders

    def path(self, qid: str) -> Path:
        return self.parts / f"{self.index[qid]:06d}.json"

    def read_input(self, path: Path) -> StoredInput:
        line, *stamped = path.read_text(encoding="utf-8").splitlines()
        d, f = json.loads(line), json.loads(stamped[0]) if stamped else {}
        texts = {str(c["docid"]): c["text"] for c in d["candidates"]}
        stamps = (f.get(FINGERPRINT_KEY), f.get(CONFIG_KEY))
        return StoredInput(list(texts), *stamps, query_text=d["query"], texts=texts, extra=d)

    def stage_problem(self, req: RerankRequest, stored: StoredInput) -> str | None:
        source, orig = self.source[req.query.qid]
        got = (stored.extra.get("source"), stored.extra.get("qid"))
        return None if got == (source, orig.query.qid) else "it holds another query"

    def compute(self, req: RerankRequest) -> SilverQuery:
        source, req = self.source[req.query.qid]
        given = self.order_free or self.cfg.include_given_order
        n, q = len(req.candidates), req.query
        orders = draw_orders(
            n, q.qid, num_orders=self.T, seed=self.cfg.seed, include_given_order=given
        )
        stored = self.archived.get(f"{source}/{q.qid}")
        hit = (
            None
            if stored is None
            else from_archive(stored, source, req, orders, (self.tid, self.revision))
        )
        if hit is not None:
            self.reused += 1
            return hit
        ps = score_presentations(self.bound.get(source, self.teacher), q, req.candidates, orders)
        scored = (ps.perms, ps.scores, self.tid, self.revision, ps.grade_probs)
        return SilverQuery(
            source, q.qid, q.text, req.candidates, *scored, order_free=self.order_free
        )

    def write(self, path: Path, record: SilverQuery, fingerprints: Mapping[str, str]) -> None:
        """Line 1: the record as the silver file holds it; line 2: the stage's fingerprints."""
        line = json.dumps(record.to_dict(), ensure_ascii=False)
        refuse_secret(line, str(path))  # the texts are results, as in a run's per-query files
        atomic_write_text(path, line + "\n" + json.dumps(dict(fingerprints)) + "\n")

    def describe(self) -> dict[str, Any]:
        return {"teacher": self.teacher.describe()}
