"""dataset_meta.yaml: merge, refuse to mix collections, strict reading."""

from __future__ import annotations

from pathlib import Path

import pytest

from presentation_dependence.errors import ConfigError, PresdepError
from presentation_dependence.firststage.meta import (
    CollectionInfo,
    RunRecord,
    read_dataset_meta,
    record_run,
    update_files,
)
from presentation_dependence.provenance import file_sha256


def _record(desc: str = "BM25") -> RunRecord:
    return RunRecord("bm25s", desc, {"k1": 0.9}, {"bm25s": "0.3"}, 100, "2026-01-01T00:00:00Z")


def test_record_merges_runs_and_files(tmp_path: Path) -> None:
    info = CollectionInfo(path="beir/x", layout="beir", corpus_sha256="abc", num_docs=3)
    record_run(tmp_path, "x", info, "a.trec", _record("first"), files={"qrels": "q.txt"})
    record_run(tmp_path, "x", info, "b.trec", _record("second"))
    record_run(tmp_path, "x", info, "a.trec", _record("replaced"))
    update_files(tmp_path, {"fixture": "fixture.jsonl"})
    meta = read_dataset_meta(tmp_path)
    assert list(meta.runs) == ["a.trec", "b.trec"] and meta.runs["a.trec"].description == "replaced"
    assert meta.files == {"qrels": "q.txt", "fixture": "fixture.jsonl"}
    assert meta.collection == info


def test_refuses_another_collection(tmp_path: Path) -> None:
    info = CollectionInfo(path="beir/x", layout="beir", corpus_sha256="abc")
    record_run(tmp_path, "x", info, "a.trec", _record())
    other = CollectionInfo(path="beir/x", layout="beir", corpus_sha256="different")
    with pytest.raises(PresdepError, match="refusing to add a run"):
        record_run(tmp_path, "x", other, "b.trec", _record())


def test_strict_read(tmp_path: Path) -> None:
    info = CollectionInfo(path="p", layout="beir")
    path = record_run(tmp_path, "x", info, "a.trec", _record())
    text = path.read_text()
    path.write_text(text.replace("retriever: bm25s", "retriever: bm25s\n    retreiver: typo"))
    with pytest.raises(ConfigError, match=r"retreiver.*Did you mean 'retriever'"):
        read_dataset_meta(path)
    path.write_text(text.replace("presdep.dataset_meta/v1", "presdep.dataset_meta/v9"))
    with pytest.raises(ConfigError, match="unsupported dataset_meta schema"):
        read_dataset_meta(path)
    path.write_text(text.replace("layout: beir", "layout: zip"))
    with pytest.raises(ConfigError, match="layout"):
        read_dataset_meta(path)
    with pytest.raises(PresdepError, match="cannot read"):
        read_dataset_meta(tmp_path / "nowhere.yaml")


def test_sha256(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"abc")
    assert file_sha256(tmp_path / "f").startswith("ba7816bf")
