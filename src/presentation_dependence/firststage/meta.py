"""``dataset_meta.yaml``: what is in a ``data/<dataset>/`` folder and exactly how each run was made.

One file per dataset folder::

    schema: presdep.dataset_meta/v1
    dataset: beir-scifact
    collection:                       # where the texts, queries and judgements come from
      path: ../shared/data/beir-scifact
      layout: beir                    # beir | pyserini | ir_datasets | rankllm_json | fixture
      corpus_sha256: 3f1a...          # of corpus.jsonl (null where there is no local corpus)
      num_docs: 5183
      num_queries: 300
      split: test
    files: {qrels: qrels.txt, topics: topics.tsv}   # other files of this folder, by role
    runs:                             # one record per first-stage run file in this folder
      bm25s.trec:
        retriever: bm25s              # bm25s | pyserini | copied
        description: BM25 (Lucene variant) k1=0.9 b=0.4, Porter, Lucene stopwords, title+text
        parameters: {...}             # every parameter that changes the run
        libraries: {bm25s: 0.3.16, PyStemmer: 3.1.0}
        depth: 1000
        created_utc: 2026-11-29T14:00:00Z
        command: [python, scripts/data/run_bm25s.py, ...]
        evaluation: {qrels: ..., measures: {ndcg@10: 0.6713}, num_queries: 300}

Writing a run record merges it into an existing file (other runs are kept); a different
``collection`` block is an error, so one folder never mixes collections. Reading is strict:
unknown keys are errors.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from presentation_dependence.config.loader import read_yaml_mapping
from presentation_dependence.errors import ConfigError, PresdepError
from presentation_dependence.fields import build_dataclass, to_plain
from presentation_dependence.io.atomic import atomic_write_text

__all__ = [
    "META_FILE",
    "SCHEMA",
    "CollectionInfo",
    "DatasetMeta",
    "RunRecord",
    "ensure_compatible",
    "read_dataset_meta",
    "record_run",
    "update_files",
]

META_FILE = "dataset_meta.yaml"
SCHEMA = "presdep.dataset_meta/v1"
Layout = Literal["beir", "pyserini", "ir_datasets", "rankllm_json", "fixture"]


@dataclass(frozen=True)
class CollectionInfo:
    """Where a folder's texts, queries and judgements come from."""

    path: str
    layout: Layout
    corpus_sha256: str | None = None
    num_docs: int | None = None
    num_queries: int | None = None
    split: str | None = None
    source: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RunRecord:
    """How one first-stage run file was made."""

    retriever: Literal["bm25s", "pyserini", "copied"]
    description: str
    parameters: dict[str, Any]
    libraries: dict[str, str]
    depth: int
    created_utc: str
    command: list[str] = field(default_factory=list)
    evaluation: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.depth < 1:
            raise ConfigError(f"RunRecord.depth must be >= 1, got {self.depth}")


@dataclass(frozen=True)
class DatasetMeta:
    """The whole ``dataset_meta.yaml``."""

    dataset: str
    collection: CollectionInfo
    runs: dict[str, RunRecord] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)
    schema: str = SCHEMA

    def __post_init__(self) -> None:
        if self.schema != SCHEMA:
            raise ConfigError(f"unsupported dataset_meta schema {self.schema!r}; expected {SCHEMA}")
        if not self.dataset:
            raise ConfigError("dataset_meta: 'dataset' must be non-empty")

    def to_yaml(self) -> str:
        plain = to_plain(self)
        ordered = {k: plain[k] for k in ("schema", "dataset", "collection", "files", "runs")}
        return yaml.safe_dump(ordered, sort_keys=False, allow_unicode=True, width=100)


def read_dataset_meta(path: str | Path) -> DatasetMeta:
    """Read a ``dataset_meta.yaml`` strictly (a folder is taken to mean ``<folder>/dataset_meta.yaml``)."""
    path = Path(path)
    if path.is_dir():
        path = path / META_FILE
    try:
        raw = read_yaml_mapping(path)
    except OSError as e:
        raise PresdepError(f"cannot read {path}: {e}") from None
    try:
        runs = raw.pop("runs", None) or {}
        if not isinstance(runs, dict):
            raise ConfigError("runs: expected a mapping of run file -> record")
        meta = build_dataclass(DatasetMeta, raw)
        records = {str(k): build_dataclass(RunRecord, v, f"runs.{k}") for k, v in runs.items()}
    except ConfigError as e:
        raise ConfigError(f"{path}: {e}") from None
    return DatasetMeta(
        dataset=meta.dataset,
        collection=meta.collection,
        runs=records,
        files=meta.files,
        schema=meta.schema,
    )


def ensure_compatible(
    folder: str | Path, dataset: str, collection: CollectionInfo
) -> DatasetMeta | None:
    """The folder's existing meta (``None`` if none); an error if it describes another collection."""
    path = Path(folder) / META_FILE
    if not path.exists():
        return None
    old = read_dataset_meta(path)
    same = (
        old.collection.path == collection.path
        and old.collection.corpus_sha256 == collection.corpus_sha256
    )
    if old.dataset != dataset or not same:
        raise PresdepError(
            f"{path} describes dataset {old.dataset!r} at {old.collection.path} "
            f"(corpus {old.collection.corpus_sha256}); refusing to add a run over "
            f"{dataset!r} at {collection.path} (corpus {collection.corpus_sha256}). "
            "Write into another folder or delete the old file"
        )
    return old


def record_run(
    folder: str | Path,
    dataset: str,
    collection: CollectionInfo,
    run_file: str,
    record: RunRecord,
    *,
    files: Mapping[str, str] | None = None,
) -> Path:
    """Add (or replace) ``run_file``'s record in ``<folder>/dataset_meta.yaml``, atomically.

    Refuses when the folder's existing file describes another collection (path or corpus
    checksum differ), so one folder never mixes runs over different corpora.
    """
    path = Path(folder) / META_FILE
    runs: dict[str, RunRecord] = {}
    all_files: dict[str, str] = {}
    old = ensure_compatible(folder, dataset, collection)
    if old is not None:
        runs, all_files = dict(old.runs), dict(old.files)
    runs[run_file] = record
    all_files.update(files or {})
    meta = DatasetMeta(dataset=dataset, collection=collection, runs=runs, files=all_files)
    return atomic_write_text(path, meta.to_yaml())


def update_files(folder: str | Path, files: Mapping[str, str]) -> Path:
    """Add ``files`` (role -> file name) to an existing ``<folder>/dataset_meta.yaml``."""
    path = Path(folder) / META_FILE
    old = read_dataset_meta(path)
    meta = DatasetMeta(
        dataset=old.dataset,
        collection=old.collection,
        runs=dict(old.runs),
        files={**old.files, **files},
    )
    return atomic_write_text(path, meta.to_yaml())
