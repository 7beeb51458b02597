"""Fixtures from ir_datasets corpora: a TREC run + an ir_datasets id -> a FixtureLoader file.

ir_datasets is optional and imported lazily. Before any work, :func:`irds_problems` checks that
it is installed and, when the dataset has no local copy under ``IR_DATASETS_HOME``
(``~/.ir_datasets``), that the network answers; download failures later on are reported the
same way, naming what is missing.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from presentation_dependence.errors import PresdepError
from presentation_dependence.io.fixture import write_fixture
from presentation_dependence.io.trec import read_qrels, read_run
from presentation_dependence.records import Candidate, Qrels, Query, RerankRequest
from presentation_dependence.requirements import (
    MissingRequirementError,
    Problem,
    check_module,
    check_network,
    reachable,
    require,
)

__all__ = ["IRDS_HOSTS", "build_fixture_irds", "irds_home", "irds_problems", "irds_text"]

IRDS_HOSTS = ("ir-datasets.com",)


def irds_home(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    return Path(env.get("IR_DATASETS_HOME") or Path.home() / ".ir_datasets").expanduser()


def irds_problems(
    dataset_id: str,
    *,
    environ: Mapping[str, str] | None = None,
    probe: Callable[[str], bool] | None = None,
) -> list[Problem]:
    """What is missing to read ``dataset_id`` with ir_datasets (empty when nothing is)."""
    problems = [check_module("ir_datasets", "irds", "ir_datasets")]
    top = dataset_id.split("/", 1)[0]
    if not (irds_home(environ) / top).is_dir():
        problems.append(
            check_network(
                IRDS_HOSTS,
                probe or reachable,
                f"ir_datasets has no local copy of {top!r} under {irds_home(environ)}",
            )
        )
    return [p for p in problems if p is not None]


def irds_text(doc: Any) -> str:
    """``title + " " + text`` where a document has both, else its text (or default text)."""
    title, text = getattr(doc, "title", None), getattr(doc, "text", None)
    if isinstance(text, str):
        return f"{title or ''} {text}".strip() if isinstance(title, str) else text.strip()
    default = getattr(doc, "default_text", None)
    if callable(default):
        return str(default()).strip()
    raise PresdepError(f"cannot find the text of document {getattr(doc, 'doc_id', doc)!r}")


def _network_error(exc: BaseException) -> bool:
    import urllib.error

    return isinstance(exc, (urllib.error.URLError, ConnectionError, TimeoutError)) or (
        "Name or service not known" in str(exc) or "Max retries exceeded" in str(exc)
    )


def _query_text(q: Any) -> str:
    text = getattr(q, "text", None)
    if isinstance(text, str):
        return text.strip()
    default = getattr(q, "default_text", None)
    return str(default()).strip() if callable(default) else str(q[1]).strip()


def _qrels_from(items: Iterable[Any], keep: set[str]) -> Qrels:
    out: dict[str, dict[str, int]] = {}
    for q in items:
        if q.query_id in keep:
            out.setdefault(str(q.query_id), {})[str(q.doc_id)] = int(q.relevance)
    return Qrels(out)


def build_fixture_irds(
    dataset_id: str,
    run_path: str | Path,
    out: str | Path,
    *,
    top_k: int = 100,
    qrels: str | Path | None = None,
) -> Path:
    """A FixtureLoader file from a TREC run over an ir_datasets corpus.

    Query texts come from the dataset's queries; judgements from ``qrels`` when given, else from
    the dataset's own qrels (when it has them).
    """
    require(f"build a fixture from ir_datasets {dataset_id!r}", irds_problems(dataset_id))
    import ir_datasets

    run = read_run(run_path)
    keep = set(run.qids())
    try:
        ds = ir_datasets.load(dataset_id)
        queries = {str(q.query_id): _query_text(q) for q in ds.queries_iter()}
        wanted = {e.docid for qid in run.qids() for e in run.entries[qid][:top_k]}
        docs = ds.docs_store().get_many(wanted)
        judged = (
            read_qrels(qrels)
            if qrels is not None
            else (_qrels_from(ds.qrels_iter(), keep) if ds.has_qrels() else None)
        )
    except KeyError as e:
        raise PresdepError(f"ir_datasets has no dataset {dataset_id!r} ({e})") from None
    except Exception as e:
        if _network_error(e):
            raise MissingRequirementError(
                f"read ir_datasets {dataset_id!r}",
                [Problem("no network", f"download failed: {e}", "run with internet access")],
            ) from None
        raise
    requests = []
    for qid in run.qids():
        if qid not in queries:
            raise PresdepError(f"{run_path}: query {qid!r} is not in {dataset_id!r}")
        cands = []
        for entry in run.entries[qid][:top_k]:
            if entry.docid not in docs:
                raise PresdepError(f"{run_path}: docid {entry.docid!r} is not in {dataset_id!r}")
            text = irds_text(docs[entry.docid])
            cands.append(Candidate(entry.docid, text, entry.rank, entry.score))
        requests.append(RerankRequest(Query(qid, queries[qid]), tuple(cands)))
    if judged is not None:
        judged = Qrels({q: d for q, d in judged.judgements.items() if q in keep})
    return write_fixture(out, requests, judged)
