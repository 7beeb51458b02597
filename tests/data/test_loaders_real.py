"""Every loader on the full real files in ../shared/data, and on malformed copies of them.

tests/data/test_loaders.py samples the real files (5 DL19 queries, 3 BEIR queries); this file
loads them whole and checks the counts their SOURCE.md files state, then corrupts one line of a
copy of each and checks the error names the file, the line and the fix. Every test is skipped
with a message when ../shared/data is absent (the ``shared_data`` fixture).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from presentation_dependence.data import load_dataset
from presentation_dependence.data.config import DataConfig
from presentation_dependence.errors import InputFormatError
from presentation_dependence.io import (
    read_beir_corpus,
    read_beir_qrels,
    read_beir_queries,
    read_corpus,
    read_qrels,
    read_rankllm_json,
    read_run,
    read_topics,
)

REPO = Path(__file__).resolve().parents[2]


def _copy(src: Path, dst: Path) -> Path:
    """Copy contents only: the shared files are read-only and the copies must be writable."""
    if src.is_dir():
        for f in src.rglob("*"):
            if f.is_file():
                _copy(f, dst / f.relative_to(src))
        return dst
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)
    return dst


def _folder(shared_data: Path, name: str) -> Path:
    """``shared_data / name``, or a skip naming what is absent."""
    path = shared_data / name
    if not path.exists():
        pytest.skip(f"{path} not found: this test needs that folder of ../shared/data")
    return path


def _replace_line(path: Path, lineno: int, new: str) -> None:
    lines = path.read_text(encoding="utf-8").split("\n")
    lines[lineno - 1] = new
    path.write_text("\n".join(lines), encoding="utf-8")


# --- the real files, whole ----------------------------------------------------------------------


def test_dl19_whole(shared_data: Path) -> None:
    folder = _folder(shared_data, "trec-dl19-passage")
    ds = load_dataset(
        DataConfig(
            dataloader_class="RankLLMJsonLoader",
            path=str(folder / "bm25_top100_dl19.json"),
            qrels=str(folder / "qrels.dl19-passage.txt"),
        )
    )
    assert len(ds.requests) == 43 and all(len(r.candidates) == 100 for r in ds.requests)
    run = read_run(folder / "bm25_top100_dl19.trec")
    assert set(run.qids()) == set(ds.qids()) and len(run) == 4300
    topics = read_topics(folder / "topics.dl19-passage.txt")
    assert set(ds.qids()) <= set(topics.queries) and len(topics) == 43
    qrels = read_qrels(folder / "qrels.dl19-passage.txt")
    assert set(qrels.qids()) == set(ds.qids())
    assert {g for d in qrels.judgements.values() for g in d.values()} == {0, 1, 2, 3}


@pytest.mark.parametrize(
    ("name", "docs", "queries", "judgements"),
    [("beir-scifact", 5183, 300, 339), ("vaswani-npl/beir", 11429, 93, 2083)],
)
def test_beir_folders_whole(
    shared_data: Path, name: str, docs: int, queries: int, judgements: int
) -> None:
    folder = _folder(shared_data, name)
    corpus = read_beir_corpus(folder)
    topics = read_beir_queries(folder)
    qrels = read_beir_qrels(folder, "test")
    assert len(corpus) == docs and len(topics) == queries
    assert sum(len(d) for d in qrels.judgements.values()) == judgements
    assert all(d in corpus for j in qrels.judgements.values() for d in j)
    assert all(corpus.values())  # no empty document


def test_noveleval_whole_and_committed_fixture(shared_data: Path) -> None:
    folder = _folder(shared_data, "noveleval")
    corpus = read_corpus(folder / "corpus.tsv")
    assert len(corpus) == 420 and all(corpus.values())
    qrels = read_qrels(folder / "qrels.txt")
    grades = [g for d in qrels.judgements.values() for g in d.values()]
    assert (grades.count(0), grades.count(1), grades.count(2)) == (290, 40, 90)
    shared = load_dataset(
        DataConfig(
            dataloader_class="RankLLMJsonLoader",
            path=str(folder / "data.json"),
            qrels=str(folder / "qrels.txt"),
        )
    )
    committed = load_dataset(DataConfig(path=str(REPO / "fixtures/noveleval/noveleval.jsonl")))
    assert committed.qids() == shared.qids() and committed.qrels == shared.qrels
    for a, b in zip(committed.requests, shared.requests, strict=True):
        assert [c.docid for c in a.candidates] == [c.docid for c in b.candidates]


def test_vaswani_raw_matches_beir_conversion(shared_data: Path) -> None:
    """The raw TREC qrels and the BEIR conversion hold the same judgements."""
    raw = read_qrels(_folder(shared_data, "vaswani-npl/raw/qrels"))
    beir = read_beir_qrels(_folder(shared_data, "vaswani-npl/beir"), "test")
    assert raw.to_dict() == beir.to_dict()


# --- malformed copies ---------------------------------------------------------------------------


def test_dl19_malformed_copies(shared_data: Path, tmp_path: Path) -> None:
    folder = _folder(shared_data, "trec-dl19-passage")
    run = _copy(folder / "bm25_top100_dl19.trec", tmp_path / "run.trec")
    _replace_line(run, 7, "264014 Q0 5611210 7 15.1")
    with pytest.raises(InputFormatError) as e:
        read_run(run)
    assert e.value.line == 7 and "6 columns" in str(e.value) and str(run) in str(e.value)
    _replace_line(run, 7, "264014 Q0 X 7 high rank")
    with pytest.raises(InputFormatError, match="numeric score"):
        read_run(run)
    first = (folder / "bm25_top100_dl19.trec").read_text().split("\n")[0]
    _replace_line(run, 7, first)
    with pytest.raises(InputFormatError, match="first on line 1"):
        read_run(run)

    qrels = _copy(folder / "qrels.dl19-passage.txt", tmp_path / "qrels.txt")
    _replace_line(qrels, 3, "19335 Q0 109063 relevant")
    with pytest.raises(InputFormatError) as e:
        read_qrels(qrels)
    assert e.value.line == 3 and "integer grade" in str(e.value)

    topics = _copy(folder / "topics.dl19-passage.txt", tmp_path / "topics.txt")
    _replace_line(topics, 2, "1110199 what is wifi vs bluetooth")
    with pytest.raises(InputFormatError) as e:
        read_topics(topics)
    assert e.value.line == 2 and "no tab" in str(e.value)


def test_rankllm_json_malformed_copies(shared_data: Path, tmp_path: Path) -> None:
    src = _folder(shared_data, "trec-dl19-passage") / "bm25_top100_dl19.json"
    items = json.loads(src.read_text(encoding="utf-8"))
    bad = tmp_path / "missing-content.json"
    del items[1]["hits"][4]["content"]
    bad.write_text(json.dumps(items, indent=1), encoding="utf-8")
    with pytest.raises(InputFormatError) as e:
        read_rankllm_json(bad)
    assert e.value.line is not None and e.value.line > 1 and '"content"' in str(e.value)
    truncated = tmp_path / "truncated.json"
    truncated.write_text(src.read_text(encoding="utf-8")[:50_000], encoding="utf-8")
    with pytest.raises(InputFormatError, match=str(truncated)):
        load_dataset(DataConfig(dataloader_class="RankLLMJsonLoader", path=str(truncated)))


def test_beir_malformed_copies(shared_data: Path, tmp_path: Path) -> None:
    folder = _copy(_folder(shared_data, "beir-scifact"), tmp_path / "scifact")
    corpus = folder / "corpus.jsonl"
    good = corpus.read_text(encoding="utf-8").split("\n")
    _replace_line(corpus, 10, good[9][:40])
    with pytest.raises(InputFormatError) as e:
        read_beir_corpus(folder)
    assert e.value.line == 10 and "invalid JSON" in str(e.value)
    _replace_line(corpus, 10, good[0])  # a duplicate _id
    with pytest.raises(InputFormatError, match="again"):
        read_beir_corpus(folder)
    _replace_line(corpus, 10, json.dumps({"title": "t", "text": "no id"}))
    with pytest.raises(InputFormatError, match='"_id"'):
        read_beir_corpus(folder)
    _replace_line(corpus, 10, good[9])

    queries = folder / "queries.jsonl"
    _replace_line(queries, 4, json.dumps({"_id": "999999", "text": "  "}))
    with pytest.raises(InputFormatError) as e:
        read_beir_queries(folder)
    assert e.value.line == 4 and "non-empty query text" in str(e.value)

    qrels = folder / "qrels" / "test.tsv"
    _replace_line(qrels, 3, "1\t31715818")
    with pytest.raises(InputFormatError) as e:
        read_beir_qrels(folder)
    assert e.value.line == 3 and "3 columns" in str(e.value)

    # the BeirLoader refuses a run line whose docid is not in the (real) corpus
    _copy(_folder(shared_data, "beir-scifact") / "queries.jsonl", queries)
    _copy(_folder(shared_data, "beir-scifact") / "qrels" / "test.tsv", qrels)
    run = tmp_path / "run.trec"
    run.write_text("1 Q0 31715818 1 3.0 x\n1 Q0 not-a-doc 2 2.0 x\n")
    with pytest.raises(InputFormatError) as e:
        load_dataset(DataConfig(dataloader_class="BeirLoader", path=str(folder), run=str(run)))
    assert e.value.line == 2 and "not-a-doc" in str(e.value)


def test_vaswani_non_utf8_copy(shared_data: Path, tmp_path: Path) -> None:
    folder = _copy(_folder(shared_data, "vaswani-npl") / "beir", tmp_path / "vaswani")
    data = (folder / "corpus.jsonl").read_bytes().split(b"\n")
    data[5] = data[5][:-3] + b"\xff" + data[5][-3:]
    (folder / "corpus.jsonl").write_bytes(b"\n".join(data))
    with pytest.raises(InputFormatError) as e:
        read_beir_corpus(folder)
    assert e.value.line == 6 and "UTF-8" in str(e.value)


def test_noveleval_malformed_copies(shared_data: Path, tmp_path: Path) -> None:
    folder = _copy(_folder(shared_data, "noveleval"), tmp_path / "noveleval")
    corpus = folder / "corpus.tsv"
    line = corpus.read_text(encoding="utf-8").split("\n")[11]
    _replace_line(corpus, 12, line.replace("\t", " ", 1))
    with pytest.raises(InputFormatError) as e:
        read_corpus(corpus)
    assert e.value.line == 12 and "'docid<TAB>text'" in str(e.value)
    _copy(_folder(shared_data, "noveleval") / "corpus.tsv", corpus)

    queries = folder / "queries.tsv"
    first = queries.read_text(encoding="utf-8").split("\n")[0]
    _replace_line(queries, 5, first)
    with pytest.raises(InputFormatError) as e:
        read_topics(queries)
    assert e.value.line == 5 and "each query id once" in str(e.value)
    _copy(_folder(shared_data, "noveleval") / "queries.tsv", queries)

    qrels = folder / "qrels.txt"
    _replace_line(qrels, 8, "1 0 2")
    with pytest.raises(InputFormatError) as e:
        load_dataset(
            DataConfig(
                dataloader_class="RankLLMJsonLoader",
                path=str(folder / "data.json"),
                qrels=str(qrels),
            )
        )
    assert e.value.line == 8 and "4 columns" in str(e.value)
