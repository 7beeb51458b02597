"""IrDatasetsLoader and ParquetLoader on local files (each skipped without its extra)."""

from __future__ import annotations

import sys
import types
import uuid
from pathlib import Path

import pytest

from presentation_dependence.config import DataConfig
from presentation_dependence.data import load_dataset
from presentation_dependence.errors import ConfigError, InputFormatError
from presentation_dependence.records import Query

DOCS = {"d1": "fleas live months", "d2": "cats groom", "d3": "eggs hatch in days"}


def _register_local_irds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scored: bool) -> str:
    ir_datasets = pytest.importorskip("ir_datasets", reason="needs the 'irds' extra (ir_datasets)")
    from ir_datasets.datasets.base import Dataset
    from ir_datasets.formats import TrecQrels, TrecScoredDocs, TsvDocs, TsvQueries
    from ir_datasets.util import LocalDownload

    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path / "irds-home"))
    (tmp_path / "docs.tsv").write_text("".join(f"{d}\t{t}\n" for d, t in DOCS.items()))
    (tmp_path / "queries.tsv").write_text("q1\thow long do fleas live\nq2\tflea eggs\n")
    (tmp_path / "qrels.txt").write_text("q1 0 d1 2\nq1 0 d2 0\nq2 0 d3 1\n")
    (tmp_path / "run.trec").write_text(
        "q1 Q0 d2 1 9.0 bm25\nq1 Q0 d1 2 8.0 bm25\nq1 Q0 d3 3 1.0 bm25\nq2 Q0 d3 1 5.0 bm25\n"
    )
    parts = [
        TsvDocs(LocalDownload(tmp_path / "docs.tsv")),
        TsvQueries(LocalDownload(tmp_path / "queries.tsv")),
        TrecQrels(LocalDownload(tmp_path / "qrels.txt"), {0: "not", 1: "rel", 2: "high"}),
    ]
    if scored:
        parts.append(TrecScoredDocs(LocalDownload(tmp_path / "run.trec")))
    name = f"presdep-test/{uuid.uuid4().hex}"
    ir_datasets.registry.register(name, Dataset(*parts))
    return name


@pytest.mark.parametrize("scored", [False, True])
def test_ir_datasets_loader(tmp_path, monkeypatch, scored: bool) -> None:
    name = _register_local_irds(tmp_path, monkeypatch, scored)
    run = None if scored else str(tmp_path / "run.trec")
    ds = load_dataset(DataConfig(dataloader_class="IrDatasetsLoader", path=name, run=run, top_k=2))
    first = ds.requests[0]
    assert first.query == Query("q1", "how long do fleas live")
    assert [(c.docid, c.text, c.rank) for c in first.candidates] == [
        ("d2", "cats groom", 1),
        ("d1", "fleas live months", 2),
    ]
    assert ds.qrels is not None and ds.qrels.grade("q1", "d1") == 2
    assert [r.query.qid for r in ds.requests] == ["q1", "q2"]


def _parquet(tmp_path: Path, rows: list[dict]) -> Path:
    pa = pytest.importorskip("pyarrow", reason="needs the 'hub' extra (pyarrow)")
    import pyarrow.parquet as pq

    path = tmp_path / "data.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def test_parquet_long_rows(tmp_path) -> None:
    rows = [
        {"qid": "q1", "query": "fleas", "docid": d, "text": t, "rank": r, "score": 1.0 / r}
        for r, (d, t) in zip((2, 1, 3), DOCS.items(), strict=True)
    ]
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\n")
    cfg = DataConfig(
        dataloader_class="ParquetLoader",
        path=str(_parquet(tmp_path, rows)),
        qrels=str(tmp_path / "qrels.txt"),
    )
    ds = load_dataset(cfg)
    (req,) = ds.requests
    assert [(c.docid, c.rank, c.score) for c in req.candidates] == [
        ("d2", 1, 1.0),
        ("d1", 2, 0.5),
        ("d3", 3, pytest.approx(1 / 3)),
    ]
    assert ds.qrels is not None and ds.qrels.grade("q1", "d1") == 1


def test_parquet_rank_llm_rows_and_errors(tmp_path) -> None:
    rows = [
        {
            "query": {"text": "fleas", "qid": "q1"},
            "candidates": [
                {"docid": d, "score": 2.0 - i, "doc": {"text": t}}
                for i, (d, t) in enumerate(DOCS.items())
            ],
        }
    ]
    ds = load_dataset(
        DataConfig(dataloader_class="ParquetLoader", path=str(_parquet(tmp_path, rows)))
    )
    assert [c.docid for c in ds.requests[0].candidates] == list(DOCS)
    bad = _parquet(tmp_path, [{"qid": "q1", "query": "fleas", "docid": "d1"}])
    with pytest.raises(InputFormatError, match="text"):
        load_dataset(DataConfig(dataloader_class="ParquetLoader", path=str(bad)))


def test_an_offline_irds_download_is_a_config_error_with_the_fix(monkeypatch) -> None:
    """ir_datasets fetches lazily, on first iteration; offline that is its "All download
    sources failed", which the loader turns into an error naming the dataset and the fix.
    (A stand-in module: the failure is ir_datasets', not one this machine can cause.)"""

    class Offline:
        def has_scoreddocs(self) -> bool:
            return True

        def scoreddocs_iter(self):
            raise RuntimeError("All download sources failed")

    fake = types.ModuleType("ir_datasets")
    fake.load = lambda dataset_id: Offline()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "ir_datasets", fake)
    cfg = DataConfig(dataloader_class="IrDatasetsLoader", path="msmarco-passage/trec-dl-2019")
    with pytest.raises(ConfigError, match=r"could not download 'msmarco-passage/trec-dl-2019'"):
        load_dataset(cfg)
    fake.load = lambda dataset_id: (_ for _ in ()).throw(ValueError("a bug"))  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="a bug"):  # any other error is not dressed up
        load_dataset(cfg)
