"""Corpora: BEIR corpus.jsonl or docid<TAB>text TSV (with CSV-style quoted texts)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from presentation_dependence.errors import InputFormatError
from presentation_dependence.io.corpus import read_corpus
from presentation_dependence.io.rankllm_json import read_rankllm_json


def test_tsv_corpus(tmp_path: Path) -> None:
    path = tmp_path / "corpus.tsv"
    path.write_text(
        "d1\tplain text\n"
        "\n"
        'd2\t"quoted\twith a tab and ""quotes"""\n'
        'd3\t"not" a quoted field\n'
        "d4\ttext\twith a raw tab\x0cand a form feed\n",
        encoding="utf-8",
    )
    assert read_corpus(path) == {
        "d1": "plain text",
        "d2": 'quoted\twith a tab and "quotes"',
        "d3": '"not" a quoted field',
        "d4": "text\twith a raw tab\x0cand a form feed",
    }


def test_jsonl_corpus_by_suffix_folder_and_sniffing(tmp_path: Path) -> None:
    lines = [{"_id": "d1", "title": "T", "text": "x"}, {"_id": "d2", "text": "y"}]
    text = "".join(json.dumps(d) + "\n" for d in lines)
    (tmp_path / "corpus.jsonl").write_text(text)
    (tmp_path / "corpus.dat").write_text(text)
    want = {"d1": "T x", "d2": "y"}
    assert read_corpus(tmp_path / "corpus.jsonl") == want
    assert read_corpus(tmp_path) == want
    assert read_corpus(tmp_path / "corpus.dat") == want


def test_tsv_without_tab(tmp_path: Path) -> None:
    path = tmp_path / "corpus.tsv"
    path.write_text("d1\tok\nd2 no tab\n")
    with pytest.raises(InputFormatError) as e:
        read_corpus(path)
    assert e.value.line == 2 and str(path) in str(e.value)


def test_tsv_duplicate_docid(tmp_path: Path) -> None:
    path = tmp_path / "corpus.tsv"
    path.write_text("d1\tok\n\nd1\tagain\n")
    with pytest.raises(InputFormatError) as e:
        read_corpus(path)
    assert e.value.line == 3 and str(path) in str(e.value)


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "corpus.tsv"
    path.write_bytes(b"d1\tok\nd2\t\xff\n")
    with pytest.raises(InputFormatError) as e:
        read_corpus(path)
    assert e.value.line == 2 and str(path) in str(e.value)


def test_noveleval_corpus_matches_its_json(shared_data: Path) -> None:
    folder = shared_data / "noveleval"
    corpus = read_corpus(folder / "corpus.tsv")
    assert len(corpus) == 420
    from_json = {
        c.docid: c.text for r in read_rankllm_json(folder / "data.json") for c in r.candidates
    }
    assert corpus == from_json  # the 80 CSV-quoted passages are unquoted exactly
