"""The Pyserini code paths against a stand-in ``pyserini`` module (no Java here).

The stand-in implements the few calls the adapter makes (``LuceneSearcher.from_prebuilt_index``,
``set_bm25``, ``batch_search``, ``doc().raw()``, ``get_topics``, ``get_qrels_file``), so the
wiring (parameters, tie order, remove-query, files written, the recorded retriever) is tested
without Java or network.
"""

from __future__ import annotations

import json
import sys
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pytest

from presentation_dependence.data import load_dataset
from presentation_dependence.data.config import DataConfig
from presentation_dependence.firststage import pyserini as pyserini_mod
from presentation_dependence.firststage.meta import read_dataset_meta
from presentation_dependence.firststage.pyserini import (
    PyseriniSpec,
    build_fixture_pyserini,
    fetch_pyserini_dataset,
)
from presentation_dependence.io.trec import read_qrels, read_run, read_topics

DOCS = {
    "d1": {"_id": "d1", "title": "Solar", "text": "solar power"},
    "d2": {"_id": "d2", "title": "", "text": "wind power"},
    "d3": {"_id": "d3", "title": "", "text": "power power"},
    "2": {"_id": "2", "title": "", "text": "a doc with the id of query 2"},
}


@dataclass
class Hit:
    docid: str
    score: float


class FakeSearcher:
    calls: ClassVar[list[Any]] = []

    def __init__(self, index: str) -> None:
        self.index = index

    @classmethod
    def from_prebuilt_index(cls, name: str) -> FakeSearcher:
        cls.calls.append(("prebuilt", name))
        return cls(name)

    def set_bm25(self, k1: float, b: float) -> None:
        self.calls.append(("bm25", k1, b))

    def batch_search(self, texts: list[str], qids: list[str], k: int, threads: int) -> dict:
        self.calls.append(("search", k, threads))
        hits = [Hit("d3", 2.0), Hit("d1", 2.0), Hit("2", 1.5), Hit("d2", 1.0)]
        return {q: hits[:k] for q in qids}

    def doc(self, docid: str) -> Any:
        if docid not in DOCS:
            return None
        return types.SimpleNamespace(raw=lambda: json.dumps(DOCS[docid]))


@pytest.fixture
def fake_pyserini(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> type[FakeSearcher]:
    qrels = tmp_path / "qrels.named.txt"
    qrels.write_text("1 0 d1 2\n2 0 d2 1\n9 0 d1 1\n")
    search = types.ModuleType("pyserini.search")
    search.get_topics = lambda name: {1: {"title": "solar power"}, 2: {"title": "wind power"}}  # type: ignore[attr-defined]
    search.get_qrels_file = lambda name: str(qrels)  # type: ignore[attr-defined]
    lucene = types.ModuleType("pyserini.search.lucene")
    lucene.LuceneSearcher = FakeSearcher  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pyserini", types.ModuleType("pyserini"))
    monkeypatch.setitem(sys.modules, "pyserini.search", search)
    monkeypatch.setitem(sys.modules, "pyserini.search.lucene", lucene)
    monkeypatch.setattr(pyserini_mod, "pyserini_problems", lambda *a, **k: [])
    FakeSearcher.calls = []
    return FakeSearcher


def test_fetch_writes_run_qrels_topics_and_meta(
    fake_pyserini: type[FakeSearcher], tmp_path: Path
) -> None:
    spec = PyseriniSpec(
        "beir-x", "beir-v1.0.0-x.flat", "beir-x-test", "beir-x-test", 0.9, 0.4, "BM25 flat", True
    )
    out = tmp_path / "data" / "beir-x"
    run_path = fetch_pyserini_dataset(spec, out, depth=3, threads=2, argv=["cmd"])
    assert fake_pyserini.calls[:3] == [
        ("prebuilt", "beir-v1.0.0-x.flat"),
        ("bm25", 0.9, 0.4),
        ("search", 4, 2),
    ]
    run = read_run(run_path)
    # ties at 2.0 in trec_eval's order (docid descending); the doc whose id is the qid is dropped
    assert [e.docid for e in run.entries["1"]] == ["d3", "d1", "2"]
    assert [e.docid for e in run.entries["2"]] == ["d3", "d1", "d2"]
    assert read_topics(out / "topics.tsv").queries == {"1": "solar power", "2": "wind power"}
    assert read_qrels(out / "qrels.txt").qids() == ["1", "2", "9"]
    meta = read_dataset_meta(out)
    rec = meta.runs["bm25.trec"]
    assert (
        rec.retriever == "pyserini"
        and rec.parameters["k1"] == 0.9
        and rec.parameters["remove_query"]
    )
    assert meta.files == {"qrels": "qrels.txt", "topics": "topics.tsv"} and rec.command == ["cmd"]


def test_build_fixture_from_the_index(fake_pyserini: type[FakeSearcher], tmp_path: Path) -> None:
    spec = PyseriniSpec("x", "idx", "t", "q", 0.9, 0.4, "BM25")
    run_path = fetch_pyserini_dataset(spec, tmp_path / "x", depth=3)
    fx = build_fixture_pyserini(
        run_path,
        "idx",
        str(tmp_path / "x" / "topics.tsv"),
        tmp_path / "fx.jsonl",
        qrels="named",
        top_k=2,
    )
    ds = load_dataset(DataConfig(path=str(fx)))
    assert ds.qids() == ["1", "2"] and [len(r.candidates) for r in ds.requests] == [2, 2]
    assert ds.requests[0].candidates[1].text == "Solar solar power"  # title + text
    assert ds.qrels is not None and ds.qrels.qids() == ["1", "2"]  # restricted to the run's queries


def test_materialise_pyserini_route(fake_pyserini: type[FakeSearcher], tmp_path: Path) -> None:
    from presentation_dependence.reproduction.materialise import materialise
    from presentation_dependence.reproduction.plan import PlanRow
    from presentation_dependence.reproduction.populations import (
        Collection,
        FirstStage,
        PyseriniSource,
        Source,
    )

    c = Collection(
        id="x",
        name="X",
        family="trec-dl",
        data_dir="trec-x",
        licence="l",
        first_stage=FirstStage("pyserini-bm25", "BM25 tuned", k1=0.82, b=0.68, depth=2),
        source=Source(pyserini=PyseriniSource("idx", "topics-x", "qrels-x")),
    )
    out = materialise(PlanRow(c, "fetch", "Pyserini"), root=tmp_path)
    assert out.result == "done", out.detail
    folder = tmp_path / "data" / "trec-x"
    meta = read_dataset_meta(folder)
    assert meta.files["fixture"] == "fixture.jsonl" and meta.files["fixture_run"] == "bm25.trec"
    assert meta.runs["bm25.trec"].parameters["k1"] == 0.82
    assert ("search", 1000, 4) in fake_pyserini.calls  # depth max(1000, declared)
    ds = load_dataset(DataConfig(path=str(folder / "fixture.jsonl")))
    assert [len(r.candidates) for r in ds.requests] == [2, 2]
