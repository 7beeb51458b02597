"""Issue 16 (5): an id that cannot be written to a TREC file is an input error where it is read."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from presentation_dependence.data.hotpotqa import read_hotpotqa
from presentation_dependence.errors import InputFormatError
from presentation_dependence.io import (
    read_beir_corpus,
    read_beir_qrels,
    read_beir_queries,
    read_corpus,
    read_fixture,
    read_rankllm_json,
)
from presentation_dependence.io.trec import read_topics


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _fixture(tmp: Path, qid: str, docid: str) -> Path:
    row = {"qid": "ok", "query": "q", "candidates": [{"docid": "d0", "text": "t"}]}
    bad = {"qid": qid, "query": "q", "candidates": [{"docid": docid, "text": "t"}]}
    return _jsonl(tmp / "fx.jsonl", [row, bad])


def _beir(tmp: Path, qid: str, docid: str) -> Path:
    folder = tmp / "beir"
    (folder / "qrels").mkdir(parents=True)
    _jsonl(folder / "corpus.jsonl", [{"_id": "d0", "text": "x"}, {"_id": docid, "text": "y"}])
    _jsonl(folder / "queries.jsonl", [{"_id": "q0", "text": "x"}, {"_id": qid, "text": "y"}])
    (folder / "qrels" / "test.tsv").write_text(
        f"query-id\tcorpus-id\tscore\nq0\td0\t1\n{qid}\t{docid}\t1\n", encoding="utf-8"
    )
    return folder


def _hotpot(tmp: Path, qid: str) -> Path:
    ctx = [{"id": "0", "title": "t", "paragraph_text": "p", "is_supporting": True}]
    row = {"answers_objects": [{"spans": ["a"]}], "question_text": "q", "contexts": ctx}
    return _jsonl(tmp / "hq.jsonl", [{"question_id": "ok", **row}, {"question_id": qid, **row}])


def _rankllm(tmp: Path, qid: str, docid: str) -> Path:
    hits = [{"docid": docid, "content": "c", "qid": qid}]
    return _jsonl(
        tmp / "r.jsonl",
        [
            {"query": {"text": "q", "qid": "ok"}, "hits": []},
            {"query": {"text": "q", "qid": qid}, "hits": hits},
        ],
    )


CASES: dict[str, Callable[[Path, str, str], tuple[Callable[[Path], object], Path]]] = {
    "fixture qid": lambda t, bad, ok: (read_fixture, _fixture(t, bad, ok)),
    "fixture docid": lambda t, bad, ok: (read_fixture, _fixture(t, ok, bad)),
    "beir corpus _id": lambda t, bad, ok: (read_beir_corpus, _beir(t, ok, bad)),
    "beir query _id": lambda t, bad, ok: (read_beir_queries, _beir(t, bad, ok)),
    "beir qrels ids": lambda t, bad, ok: (read_beir_qrels, _beir(t, bad, ok)),
    "corpus tsv docid": lambda t, bad, ok: (
        read_corpus,
        _write(t / "c.tsv", f"d0\tfine\n{bad}\ttext\n"),
    ),
    "topics qid": lambda t, bad, ok: (read_topics, _write(t / "t.tsv", f"q0\tfine\n{bad}\ttext\n")),
    "rankllm qid": lambda t, bad, ok: (read_rankllm_json, _rankllm(t, bad, ok)),
    "rankllm docid": lambda t, bad, ok: (read_rankllm_json, _rankllm(t, ok, bad)),
    "hotpotqa question_id": lambda t, bad, ok: (read_hotpotqa, _hotpot(t, bad)),
}


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("bad", ["two words", "tab\x0bchar", "nul\x00byte"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_unwritable_ids_fail_on_their_line(tmp_path: Path, case: str, bad: str) -> None:
    reader, path = CASES[case](tmp_path, bad, "fine-id")
    with pytest.raises(InputFormatError) as e:
        reader(path)
    assert e.value.line == (3 if "qrels" in case else 2), str(e.value)
    assert str(path).split("/")[-1] in str(e.value) and "whitespace" in str(e.value)
