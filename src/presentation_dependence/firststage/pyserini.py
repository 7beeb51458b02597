"""Pyserini first stages (Java 21 + network) and fixtures built from a Pyserini text index.

Nothing here imports Pyserini at module import. Every entry point first checks what Pyserini
needs (:func:`pyserini_problems`: the package, Java 21+ via ``JAVA_HOME``, network for a
prebuilt index that is not a local folder) and stops with one
:class:`~presentation_dependence.requirements.MissingRequirementError` naming all of
it. Pyserini builds an OpenAI client when imported; a placeholder ``OPENAI_API_KEY`` is set for
the import only when none is set (it is never used or recorded).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from presentation_dependence.errors import PresdepError
from presentation_dependence.firststage.meta import (
    CollectionInfo,
    RunRecord,
    record_run,
)
from presentation_dependence.io.fixture import write_fixture
from presentation_dependence.io.trec import (
    read_qrels,
    read_run,
    read_topics,
    write_qrels,
    write_run,
    write_topics,
)
from presentation_dependence.provenance import package_versions, utc_now
from presentation_dependence.records import Candidate, Qrels, Query, RerankRequest, Run, RunEntry
from presentation_dependence.requirements import (
    Problem,
    check_java,
    check_module,
    check_network,
    java_major_version,
    reachable,
    require,
)

__all__ = [
    "PYSERINI_HOSTS",
    "PyseriniSpec",
    "build_fixture_pyserini",
    "doc_text",
    "fetch_pyserini_dataset",
    "pyserini_problems",
]

log = logging.getLogger(__name__)

# Where Pyserini downloads prebuilt indexes from (topics and most qrels ship inside its jar).
PYSERINI_HOSTS = ("rgw.cs.uwaterloo.ca",)
MIN_JAVA = 21


@dataclass(frozen=True)
class PyseriniSpec:
    """One Pyserini BM25 first stage: index, topics, qrels and the exact BM25 parameters."""

    dataset: str
    index: str
    topics: str
    qrels: str
    k1: float
    b: float
    label: str
    remove_query: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def pyserini_problems(
    index: str | None,
    *,
    assume_cached: bool = False,
    environ: Mapping[str, str] | None = None,
    probe: Callable[[str], bool] | None = None,
) -> list[Problem]:
    """What is missing to use Pyserini with ``index`` (empty when nothing is)."""
    problems = [
        check_module("pyserini", "pyserini"),
        check_java(MIN_JAVA, environ),
    ]
    needs_download = index is not None and not Path(index).exists() and not assume_cached
    if needs_download:
        problems.append(
            check_network(
                PYSERINI_HOSTS, probe or reachable, f"download of the prebuilt index {index!r}"
            )
        )
    return [p for p in problems if p is not None]


def _import_pyserini() -> Any:
    os.environ.setdefault("OPENAI_API_KEY", "placeholder-unused")  # see the module docstring
    from pyserini.search.lucene import LuceneSearcher

    return LuceneSearcher


def _searcher(index: str) -> Any:
    searcher_cls = _import_pyserini()
    if Path(index).exists():
        return searcher_cls(str(index))
    return searcher_cls.from_prebuilt_index(index)


def _topics(spec: str) -> dict[str, str]:
    """Topics from a ``qid<TAB>text`` file, else Pyserini's named topics (``dl19-passage``)."""
    if Path(spec).is_file():
        return dict(read_topics(spec).queries)
    from pyserini.search import get_topics

    raw = get_topics(spec)
    if not raw:
        raise PresdepError(f"Pyserini has no topics named {spec!r}")
    out = {}
    for qid, fields in raw.items():
        text = fields.get("title") or fields.get("question") or next(iter(fields.values()), "")
        out[str(qid)] = str(text).strip()
    return out


def _qrels(spec: str) -> Qrels:
    if Path(spec).is_file():
        return read_qrels(spec)
    from pyserini.search import get_qrels_file

    return read_qrels(get_qrels_file(spec))


def _ordered(rows: Sequence[tuple[float, str]], depth: int) -> list[tuple[float, str]]:
    """Scores rounded as written, then trec_eval's order (score desc, docid desc)."""
    return sorted(((round(s, 6), d) for s, d in rows), reverse=True)[:depth]


def fetch_pyserini_dataset(
    spec: PyseriniSpec,
    out_dir: str | Path,
    *,
    depth: int = 1000,
    threads: int = 4,
    assume_cached: bool = False,
    argv: Sequence[str] = (),
    run_file: str = "bm25.trec",
) -> Path:
    """Retrieve ``spec`` with Pyserini into ``out_dir``: run, ``qrels.txt``, ``topics.tsv``, meta.

    Returns the path of the run file. Stops before any work when Pyserini, Java 21 or the
    network is missing.
    """
    require(
        f"fetch {spec.dataset} with Pyserini",
        pyserini_problems(spec.index, assume_cached=assume_cached),
    )
    out = Path(out_dir)
    run, topics = _retrieve(spec, depth, threads)
    run_path = write_run(run, out / run_file, tie_safe=False)
    write_topics(topics.items(), out / "topics.tsv")
    write_qrels(_qrels(spec.qrels), out / "qrels.txt")
    _record(spec, out, len(topics), depth, argv, run_file)
    log.info("%s: %d queries, %d lines", run_path, len(run.entries), len(run))
    return run_path


def _retrieve(spec: PyseriniSpec, depth: int, threads: int) -> tuple[Run, dict[str, str]]:
    """BM25 top-``depth`` of every topic (the query's own document dropped with
    ``remove_query``); the run (queries without a hit left out) and the topics."""
    searcher = _searcher(spec.index)
    searcher.set_bm25(spec.k1, spec.b)
    topics = _topics(spec.topics)
    qids = list(topics)
    extra = 1 if spec.remove_query else 0
    hits = searcher.batch_search([topics[q] for q in qids], qids, k=depth + extra, threads=threads)
    entries: dict[str, tuple[RunEntry, ...]] = {}
    for qid in qids:
        rows = [
            (float(h.score), str(h.docid))
            for h in hits.get(qid, [])
            if not (spec.remove_query and str(h.docid) == qid)
        ]
        entries[qid] = tuple(
            RunEntry(qid, d, r, s, "bm25") for r, (s, d) in enumerate(_ordered(rows, depth), 1)
        )
    return Run({q: e for q, e in entries.items() if e}, name="bm25"), topics


def _record(
    spec: PyseriniSpec,
    out: Path,
    num_queries: int,
    depth: int,
    argv: Sequence[str],
    run_file: str,
) -> None:
    """Record how the run was made (retriever, parameters, libraries, Java) beside it."""
    java = os.environ.get("JAVA_HOME", "")
    record = RunRecord(
        retriever="pyserini",
        description=spec.label,
        parameters={**spec.to_dict(), "depth": depth},
        libraries={
            **package_versions(["pyserini", "presentation-dependence"]),
            "java": str(java_major_version(Path(java) / "bin" / "java") if java else "PATH"),
        },
        depth=depth,
        created_utc=utc_now(),
        command=list(argv),
    )
    collection = CollectionInfo(
        path=spec.index,
        layout="pyserini",
        num_queries=num_queries,
        source={"index": spec.index, "topics": spec.topics, "qrels": spec.qrels},
    )
    record_run(
        out,
        spec.dataset,
        collection,
        run_file,
        record,
        files={"qrels": "qrels.txt", "topics": "topics.tsv"},
    )


def doc_text(raw: str | None) -> str:
    """A document's text from a Pyserini ``raw()`` record.

    BEIR flat indexes store ``{"_id", "title", "text"}`` (-> ``title + " " + text``), MS MARCO v1
    ``{"id", "contents"}``, MS MARCO v2 ``{"passage", ...}``; anything that is not JSON is
    taken as the text itself.
    """
    if raw is None:
        return ""
    try:
        obj = json.loads(raw)
    except json.JSONDecodeError:
        return raw.strip()
    if not isinstance(obj, dict):
        return str(obj).strip()
    if "text" in obj:
        return f"{obj.get('title') or ''} {obj.get('text') or ''}".strip()
    for key in ("contents", "passage", "body", "segment"):
        if key in obj:
            return str(obj[key] or "").strip()
    return raw.strip()


def build_fixture_pyserini(
    run_path: str | Path,
    index: str,
    topics: str,
    out: str | Path,
    *,
    qrels: str | None = None,
    top_k: int = 100,
    assume_cached: bool = False,
) -> Path:
    """A FixtureLoader file from a TREC run and a Pyserini index that stores raw documents."""
    require(
        "build a fixture from a Pyserini index",
        pyserini_problems(index, assume_cached=assume_cached),
    )
    run = read_run(run_path)
    searcher = _searcher(index)
    queries = _topics(topics)
    requests = []
    for qid in run.qids():
        if qid not in queries:
            raise PresdepError(f"{run_path}: query {qid!r} is not in the topics {topics!r}")
        cands = []
        for e in run.entries[qid][:top_k]:
            doc = searcher.doc(e.docid)
            if doc is None:
                raise PresdepError(f"docid {e.docid!r} of {run_path} is not in the index {index}")
            cands.append(Candidate(e.docid, doc_text(doc.raw()), e.rank, e.score))
        requests.append(RerankRequest(Query(qid, queries[qid]), tuple(cands)))
    judged = _qrels(qrels) if qrels else None
    if judged is not None:
        keep = set(run.qids())
        judged = Qrels({q: d for q, d in judged.judgements.items() if q in keep})
    return write_fixture(out, requests, judged)
