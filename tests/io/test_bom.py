"""Issue 16 (2): a UTF-8 byte-order mark at the start of an input file is not part of its data."""

from __future__ import annotations

import json
from pathlib import Path

from presentation_dependence.io import read_beir_corpus, read_corpus, read_fixture
from presentation_dependence.io.trec import read_qrels, read_run, read_topics

BOM = "\ufeff"


def _bom_file(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_bytes((BOM + text).encode("utf-8"))
    return path


def test_bom_in_qrels_keeps_the_first_judgement(tmp_path: Path) -> None:
    path = _bom_file(tmp_path, "qrels.txt", "q1 0 d1 2\nq1 0 d2 0\nq2 0 d3 1\n")
    assert read_qrels(path).judgements == {"q1": {"d1": 2, "d2": 0}, "q2": {"d3": 1}}


def test_bom_in_run_and_topics_reads_like_without(tmp_path: Path) -> None:
    run = read_run(_bom_file(tmp_path, "run.trec", "q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t\n"))
    assert run.qids() == ["q1"] and [e.docid for e in run.entries["q1"]] == ["d1", "d2"]
    topics = read_topics(_bom_file(tmp_path, "topics.tsv", "q1\tfirst query\nq2\tsecond\n"))
    assert topics.queries == {"q1": "first query", "q2": "second"}


def test_bom_in_json_lines_inputs(tmp_path: Path) -> None:
    row = {"qid": "q1", "query": "text", "candidates": [{"docid": "d1", "text": "a"}]}
    requests, _ = read_fixture(_bom_file(tmp_path, "fx.jsonl", json.dumps(row) + "\n"))
    assert requests[0].query.qid == "q1"
    corpus = _bom_file(tmp_path, "corpus.tsv", "d1\tone\nd2\ttwo\n")
    assert read_corpus(corpus) == {"d1": "one", "d2": "two"}
    beir = tmp_path / "beir"
    beir.mkdir()
    _bom_file(beir, "corpus.jsonl", json.dumps({"_id": "d1", "title": "", "text": "x"}) + "\n")
    assert read_beir_corpus(beir) == {"d1": "x"}
