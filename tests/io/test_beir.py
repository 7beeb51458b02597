"""BEIR folders: corpus text, queries, qrels splits and strict errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from presentation_dependence.errors import InputFormatError
from presentation_dependence.io.beir import (
    beir_splits,
    read_beir_corpus,
    read_beir_qrels,
    read_beir_queries,
)


def _beir(tmp_path: Path, corpus: list[dict], queries: list[dict], qrels: str) -> Path:
    folder = tmp_path / "beir"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in corpus))
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (folder / "qrels" / "test.tsv").write_text(qrels)
    return folder


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return _beir(
        tmp_path,
        [
            {"_id": "d1", "title": "Title", "text": "Body."},
            {"_id": 2, "title": "", "text": "No title"},
        ],
        [{"_id": "q1", "text": "a query", "metadata": {}}],
        "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\t2\t0\n",
    )


def test_reads_a_folder(folder: Path) -> None:
    assert read_beir_corpus(folder) == {"d1": "Title Body.", "2": "No title"}
    assert read_beir_queries(folder).to_dict() == {"q1": "a query"}
    assert read_beir_qrels(folder, "test").to_dict() == {"q1": {"d1": 1, "2": 0}}
    assert beir_splits(folder) == ["test"]


def test_unknown_split_lists_the_splits(folder: Path) -> None:
    with pytest.raises(InputFormatError) as e:
        read_beir_qrels(folder, "dev")
    assert e.value.line is None
    assert "dev.tsv" in str(e.value) and "test" in str(e.value)


def test_qrels_grade_not_integer(folder: Path) -> None:
    path = folder / "qrels" / "test.tsv"
    path.write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\t2\tyes\n")
    with pytest.raises(InputFormatError) as e:
        read_beir_qrels(folder)
    assert e.value.line == 3 and str(path) in str(e.value)


def test_qrels_wrong_column_count(folder: Path) -> None:
    path = folder / "qrels" / "test.tsv"
    path.write_text("query-id\tcorpus-id\tscore\nq1\td1\n")
    with pytest.raises(InputFormatError) as e:
        read_beir_qrels(folder)
    assert e.value.line == 2 and str(path) in str(e.value)


def test_malformed_corpus_line(folder: Path) -> None:
    path = folder / "corpus.jsonl"
    path.write_text('{"_id": "d1", "text": "ok"}\n\n{"_id": "d2", "text": \n')
    with pytest.raises(InputFormatError) as e:
        read_beir_corpus(folder)
    assert e.value.line == 3 and str(path) in str(e.value)


def test_duplicate_corpus_id(folder: Path) -> None:
    path = folder / "corpus.jsonl"
    path.write_text('{"_id": "d1", "text": "a"}\n{"_id": "d1", "text": "b"}\n')
    with pytest.raises(InputFormatError) as e:
        read_beir_corpus(folder)
    assert e.value.line == 2 and str(path) in str(e.value)


def test_empty_query_text(folder: Path) -> None:
    path = folder / "queries.jsonl"
    path.write_text('{"_id": "q1", "text": "ok"}\n{"_id": "q2", "text": " "}\n')
    with pytest.raises(InputFormatError) as e:
        read_beir_queries(folder)
    assert e.value.line == 2 and str(path) in str(e.value)


def test_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(InputFormatError, match="BEIR folder"):
        read_beir_corpus(tmp_path / "nope")


@pytest.mark.parametrize(
    ("name", "docs", "queries", "judgements"),
    [("beir-scifact", 5183, 300, 339), ("vaswani-npl/beir", 11429, 93, 2083)],
)
def test_real_folders(
    shared_data: Path, name: str, docs: int, queries: int, judgements: int
) -> None:
    folder = shared_data / name
    corpus = read_beir_corpus(folder)
    topics = read_beir_queries(folder)
    qrels = read_beir_qrels(folder, "test")
    assert (len(corpus), len(topics)) == (docs, queries)
    assert sum(len(d) for d in qrels.judgements.values()) == judgements
    assert set(qrels.qids()) <= set(topics.queries)
    assert all(d in corpus for judged in qrels.judgements.values() for d in judged)
    assert all(text for text in corpus.values())
