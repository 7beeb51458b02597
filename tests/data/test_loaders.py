"""Data loaders on hand-written fixtures and on the real files in ../shared/data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from presentation_dependence.data import LOADERS, Dataset, load_dataset
from presentation_dependence.data.config import DataConfig
from presentation_dependence.errors import ConfigError, InputFormatError, RegistryError
from presentation_dependence.io import (
    read_beir_corpus,
    read_beir_qrels,
    read_qrels,
    read_rankllm_json,
    write_fixture,
    write_qrels,
    write_run,
)
from presentation_dependence.records import Candidate, Qrels, Query, RerankRequest, Run, RunEntry


def _fixture(tmp_path: Path, *, with_qrels: bool = True) -> Path:
    reqs = [
        RerankRequest(
            Query(f"q{i}", f"query {i}"),
            # listed out of first-stage order on purpose
            tuple(Candidate(f"q{i}-d{r}", f"text {r}", r, 10.0 - r) for r in (3, 1, 4, 2)),
        )
        for i in range(1, 4)
    ]
    qrels = Qrels({f"q{i}": {f"q{i}-d1": 1, f"q{i}-d4": 2} for i in range(1, 4)})
    return write_fixture(tmp_path / "fx.jsonl", reqs, qrels if with_qrels else None)


def _write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_registry_names() -> None:
    assert LOADERS.names() == [
        "BeirLoader",
        "FixtureLoader",
        "HotpotQALoader",
        "IrDatasetsLoader",
        "ParquetLoader",
        "RankLLMJsonLoader",
        "TrecRunLoader",
    ]


def test_fixture_loader_top_k_and_max_queries(tmp_path: Path) -> None:
    cfg = DataConfig(path=str(_fixture(tmp_path)), top_k=2, max_queries=2)
    ds = load_dataset(cfg)
    assert isinstance(ds, Dataset) and ds.name == "fx"
    assert ds.qids() == ["q1", "q2"]
    assert [(c.docid, c.rank) for c in ds.requests[0].candidates] == [("q1-d1", 1), ("q1-d2", 2)]
    assert ds.qrels is not None and ds.qrels.qids() == ["q1", "q2"]  # restricted to kept queries


def test_fixture_loader_path_alternatives_and_qrels_override(tmp_path: Path) -> None:
    path = _fixture(tmp_path, with_qrels=False)
    assert load_dataset(DataConfig(path=str(path))).qrels is None
    qrels_path = write_qrels(Qrels({"q2": {"q2-d3": 3}, "q9": {"x": 1}}), tmp_path / "qrels.txt")
    cfg = DataConfig(path=[str(tmp_path / "missing.jsonl"), str(path)], qrels=str(qrels_path))
    ds = load_dataset(cfg)
    assert ds.qrels is not None and ds.qrels.to_dict() == {"q2": {"q2-d3": 3}}
    assert [len(r.candidates) for r in ds.requests] == [4, 4, 4]


def test_unknown_loader_suggests_a_name(tmp_path: Path) -> None:
    with pytest.raises(RegistryError, match="FixtureLoader"):
        load_dataset(DataConfig(dataloader_class="FixtureLoadr", path=str(_fixture(tmp_path))))


def test_missing_path_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"data\.path"):
        load_dataset(DataConfig(path=None))
    with pytest.raises(ConfigError, match="none of these paths exists"):
        load_dataset(DataConfig(path=str(tmp_path / "nope.jsonl")))


def _tiny_trec(tmp_path: Path, run_text: str) -> DataConfig:
    (tmp_path / "corpus.tsv").write_text("a\tdoc a\nb\tdoc b\nc\tdoc c\n")
    (tmp_path / "topics.tsv").write_text("q1\tfirst\nq2\tsecond\n")
    (tmp_path / "run.trec").write_text(run_text)
    return DataConfig(
        dataloader_class="TrecRunLoader",
        run=str(tmp_path / "run.trec"),
        corpus=str(tmp_path / "corpus.tsv"),
        topics=str(tmp_path / "topics.tsv"),
    )


def test_trec_run_loader_orders_as_trec_eval(tmp_path: Path) -> None:
    cfg = _tiny_trec(
        tmp_path, "q2 Q0 a 1 1.0 r\nq2 Q0 b 2 1.0 r\nq1 Q0 c 1 5.0 r\nq2 Q0 c 3 0.5 r\n"
    )
    ds = load_dataset(cfg)
    assert ds.qids() == ["q2", "q1"] and ds.qrels is None and ds.name == "run"
    q2 = ds.requests[0]
    assert q2.query == Query("q2", "second")
    # tie at 1.0 broken by docid descending, as trec_eval does
    assert [(c.docid, c.text, c.rank, c.score) for c in q2.candidates] == [
        ("b", "doc b", 1, 1.0),
        ("a", "doc a", 2, 1.0),
        ("c", "doc c", 3, 0.5),
    ]


def test_run_query_missing_from_topics(tmp_path: Path) -> None:
    cfg = _tiny_trec(tmp_path, "q1 Q0 a 1 1.0 r\n\nq7 Q0 b 1 1.0 r\n")
    with pytest.raises(InputFormatError) as e:
        load_dataset(cfg)
    assert e.value.line == 3 and str(tmp_path / "run.trec") in str(e.value)


def test_run_docid_missing_from_corpus(tmp_path: Path) -> None:
    cfg = _tiny_trec(tmp_path, "q1 Q0 a 1 1.0 r\nq1 Q0 zz 2 0.5 r\n")
    with pytest.raises(InputFormatError) as e:
        load_dataset(cfg)
    assert e.value.line == 2 and "'zz'" in str(e.value)


# --- real data --------------------------------------------------------------------------------


def test_dl19_json_and_trec_run_agree(shared_data: Path, tmp_path: Path) -> None:
    folder = shared_data / "trec-dl19-passage"
    qrels = str(folder / "qrels.dl19-passage.txt")
    from_json = load_dataset(
        DataConfig(
            dataloader_class="RankLLMJsonLoader",
            path=str(folder / "bm25_top100_dl19.json"),
            qrels=qrels,
            top_k=20,
            max_queries=5,
        )
    )
    assert len(from_json.requests) == 5 and all(len(r.candidates) == 20 for r in from_json.requests)
    assert from_json.qrels is not None and set(from_json.qrels.qids()) == set(from_json.qids())
    # a corpus of every passage in the JSON lets the TREC run be loaded the same way
    texts = {
        c.docid: c.text
        for r in read_rankllm_json(folder / "bm25_top100_dl19.json")
        for c in r.candidates
    }
    corpus = _write_jsonl(
        tmp_path / "corpus.jsonl", [{"_id": d, "title": "", "text": t} for d, t in texts.items()]
    )
    from_run = load_dataset(
        DataConfig(
            dataloader_class="TrecRunLoader",
            run=str(folder / "bm25_top100_dl19.trec"),
            corpus=str(corpus),
            topics=str(folder / "topics.dl19-passage.txt"),
            qrels=qrels,
            top_k=20,
            max_queries=5,
        )
    )
    assert from_run.qids() == from_json.qids()
    for a, b in zip(from_run.requests, from_json.requests, strict=True):
        assert a.query == b.query
        assert [(c.docid, c.rank) for c in a.candidates] == [
            (c.docid, c.rank) for c in b.candidates
        ]
        assert [c.text for c in a.candidates] == [c.text.strip() for c in b.candidates]
    assert from_run.qrels == from_json.qrels


def test_noveleval(shared_data: Path, tmp_path: Path) -> None:
    folder = shared_data / "noveleval"
    from_json = load_dataset(
        DataConfig(
            dataloader_class="RankLLMJsonLoader",
            path=str(folder / "data.json"),
            qrels=str(folder / "qrels.txt"),
        )
    )
    assert len(from_json.requests) == 21 and all(
        len(r.candidates) == 20 for r in from_json.requests
    )
    assert from_json.qrels is not None and len(from_json.qrels.qids()) == 21
    # the same candidates as a TREC run over corpus.tsv + queries.tsv
    run = Run(
        {
            r.query.qid: tuple(
                RunEntry(r.query.qid, c.docid, c.rank, 100.0 - c.rank) for c in r.candidates
            )
            for r in from_json.requests
        }
    )
    write_run(run, tmp_path / "run.trec")
    from_run = load_dataset(
        DataConfig(
            dataloader_class="TrecRunLoader",
            run=str(tmp_path / "run.trec"),
            corpus=str(folder / "corpus.tsv"),
            topics=str(folder / "queries.tsv"),
            qrels=str(folder / "qrels.txt"),
        )
    )
    assert from_run.qids() == from_json.qids()
    for a, b in zip(from_run.requests, from_json.requests, strict=True):
        assert a.query == b.query  # queries.tsv text == data.json text
        assert [(c.docid, c.text, c.rank) for c in a.candidates] == [
            (c.docid, c.text, c.rank) for c in b.candidates
        ]
    assert from_run.qrels == from_json.qrels


@pytest.mark.parametrize("name", ["beir-scifact", "vaswani-npl/beir"])
def test_beir_loader_with_a_tiny_run(shared_data: Path, tmp_path: Path, name: str) -> None:
    folder = shared_data / name
    qrels = read_beir_qrels(folder, "test")
    qids = qrels.qids()[:3]
    corpus = read_beir_corpus(folder)
    filler = sorted(corpus)[:5]  # unjudged documents below the judged ones
    lines = []
    for qid in qids:
        docids = list(qrels.judgements[qid]) + [d for d in filler if d not in qrels.judgements[qid]]
        lines += [f"{qid} Q0 {d} {r} {50.0 - r} bm25" for r, d in enumerate(docids, start=1)]
    (tmp_path / "first.trec").write_text("\n".join(lines) + "\n")
    ds = load_dataset(
        DataConfig(
            dataloader_class="BeirLoader",
            path=str(folder),
            run=str(tmp_path / "first.trec"),
            top_k=4,
        )
    )
    assert ds.qids() == qids and ds.name == Path(name).name
    assert ds.qrels is not None and ds.qrels.to_dict() == {q: qrels.judgements[q] for q in qids}
    for req in ds.requests:
        assert req.query.text and len(req.candidates) == 4
        assert [c.rank for c in req.candidates] == [1, 2, 3, 4]
        assert all(c.text == corpus[c.docid] for c in req.candidates)
        judged = list(qrels.judgements[req.query.qid])
        assert [c.docid for c in req.candidates][: len(judged)] == judged[:4]


def test_beir_loader_unknown_split(shared_data: Path, tmp_path: Path) -> None:
    folder = shared_data / "beir-scifact"
    first = next(iter(read_beir_qrels(folder).judgements.items()))
    (tmp_path / "r.trec").write_text(f"{first[0]} Q0 {next(iter(first[1]))} 1 1.0 x\n")
    cfg = DataConfig(
        dataloader_class="BeirLoader", path=str(folder), run=str(tmp_path / "r.trec"), split="train"
    )
    with pytest.raises(InputFormatError, match="test"):
        load_dataset(cfg)


def test_dl19_qrels_file_matches_dataset(shared_data: Path) -> None:
    folder = shared_data / "trec-dl19-passage"
    ds = load_dataset(
        DataConfig(
            dataloader_class="RankLLMJsonLoader",
            path=str(folder / "bm25_top100_dl19.json"),
            qrels=str(folder / "qrels.dl19-passage.txt"),
        )
    )
    assert ds.qrels == read_qrels(folder / "qrels.dl19-passage.txt")


def test_judgements_matching_no_query_are_counted_in_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 16 (2): judgements for queries the data never has are dropped with a warning."""
    qrels = Qrels({"q1": {"q1-d1": 1}, "q9": {"x": 1, "y": 2}, "q8": {"z": 1}})
    cfg = DataConfig(
        path=str(_fixture(tmp_path, with_qrels=False)),
        qrels=str(write_qrels(qrels, tmp_path / "qrels.txt")),
    )
    with caplog.at_level("WARNING", logger="presentation_dependence"):
        ds = load_dataset(cfg)
    assert ds.qrels is not None and ds.qrels.qids() == ["q1"]
    msg = " ".join(r.getMessage() for r in caplog.records if r.levelname == "WARNING")
    assert "2 of 3 judged queries" in msg and "3 judgements" in msg and "q9" in msg
