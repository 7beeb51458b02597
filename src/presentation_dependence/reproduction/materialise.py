"""Materialise a plan row into ``data/<data_dir>/``: the first-stage run, ``fixture.jsonl`` (the
top-``depth`` candidates with their texts and the judgements: what a reranking config reads) and
``dataset_meta.yaml`` (how the run was made). Routes, by plan status and route:

* local rank_llm JSON (DL19 in ``../shared/data``): the candidates are converted; the TREC run
  is copied byte for byte and recorded as ``copied`` with the first stage its copy declares;
* local BEIR folder: bm25s (the ``pyserini-flat`` preset) writes ``bm25s.trec``;
* local fixture: restricted to ``depth`` and copied;
* Pyserini: ``fetch_pyserini_dataset`` then ``build_fixture_pyserini``;
* BEIR zip: downloaded and unpacked into ``data/<data_dir>/beir/``, then bm25s.

Rows with status ``skip`` or ``blocked`` are never touched; :func:`materialise` says why.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import urllib.request
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from presentation_dependence.data.config import DataConfig
from presentation_dependence.data.loaders import load_dataset
from presentation_dependence.errors import PresdepError
from presentation_dependence.firststage.bm25 import PRESETS, run_bm25s_beir
from presentation_dependence.firststage.meta import (
    CollectionInfo,
    RunRecord,
    record_run,
    update_files,
)
from presentation_dependence.firststage.pyserini import (
    PyseriniSpec,
    build_fixture_pyserini,
    fetch_pyserini_dataset,
)
from presentation_dependence.io.fixture import write_fixture
from presentation_dependence.provenance import file_sha256, package_versions, utc_now
from presentation_dependence.reproduction.plan import FIXTURE, PlanRow

__all__ = ["Outcome", "download_beir", "materialise", "pyserini_spec"]

log = logging.getLogger(__name__)
BM25S_RUN = "bm25s.trec"
BM25S_DEPTH = 1000


@dataclass(frozen=True)
class Outcome:
    """What happened to one collection."""

    collection: str
    result: Literal["done", "skipped", "failed"]
    detail: str


def pyserini_spec(row: PlanRow) -> PyseriniSpec:
    c = row.collection
    if c.source.pyserini is None or c.first_stage.k1 is None or c.first_stage.b is None:
        raise PresdepError(f"{c.id}: the population declares no Pyserini BM25 route")
    return PyseriniSpec(
        dataset=c.data_dir,
        index=c.source.pyserini.index,
        topics=c.source.pyserini.topics,
        qrels=c.source.pyserini.qrels,
        k1=c.first_stage.k1,
        b=c.first_stage.b,
        label=c.first_stage.label,
        remove_query=c.first_stage.remove_query,
    )


def _export(cfg: DataConfig, out: Path) -> int:
    ds = load_dataset(cfg)
    write_fixture(out, ds.requests, ds.qrels)
    return len(ds.requests)


def _beir(folder: Path, out: Path, row: PlanRow, argv: Sequence[str]) -> str:
    params = replace(
        PRESETS["pyserini-flat"], depth=max(BM25S_DEPTH, row.collection.first_stage.depth)
    )
    res = run_bm25s_beir(
        folder, out / BM25S_RUN, params, dataset=row.collection.data_dir, argv=argv
    )
    n = _export(
        DataConfig(
            dataloader_class="BeirLoader",
            path=str(folder),
            run=str(res.run_path),
            top_k=row.collection.first_stage.depth,
        ),
        out / FIXTURE,
    )
    update_files(out, {"fixture": FIXTURE, "fixture_run": BM25S_RUN})
    figures = ", ".join(f"{k} {v:.4f}" for k, v in (res.metrics or {}).items())
    return f"bm25s over {folder} ({figures}); fixture of {n} queries"


def _rankllm(row: PlanRow, root: Path, out: Path, argv: Sequence[str]) -> str:
    local = row.local
    assert local is not None
    base = root / local.path
    files = local.files
    qrels = str(base / files["qrels"]) if "qrels" in files else None
    n = _export(
        DataConfig(
            dataloader_class="RankLLMJsonLoader",
            path=str(base / files["candidates"]),
            qrels=qrels,
            top_k=row.collection.first_stage.depth,
        ),
        out / FIXTURE,
    )
    meta_files = {"fixture": FIXTURE}
    if "run" in files:
        shutil.copyfile(base / files["run"], out / "bm25.trec")
        record = RunRecord(
            retriever="copied",
            description=local.first_stage,
            parameters={"source": str(base / files["run"])},
            libraries=package_versions(["presentation-dependence"]),
            depth=row.collection.first_stage.depth,
            created_utc=utc_now(),
            command=list(argv),
        )
        info = CollectionInfo(
            path=str(base),
            layout="rankllm_json",
            corpus_sha256=file_sha256(base / files["candidates"]),
            num_queries=n,
        )
        record_run(out, row.collection.data_dir, info, "bm25.trec", record)
        meta_files["fixture_run"] = "bm25.trec"
        update_files(out, meta_files)
    return f"converted {base / files['candidates']}: fixture of {n} queries ({local.first_stage})"


def download_beir(url: str, dest: Path, timeout: float = 60.0) -> Path:
    """Download a BEIR zip and unpack its one top folder to ``dest`` (atomically: all or nothing)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest.parent, prefix=".beir-") as tmp:
        archive = Path(tmp) / "beir.zip"
        with urllib.request.urlopen(url, timeout=timeout) as resp, archive.open("wb") as fh:
            shutil.copyfileobj(resp, fh)
        unpacked = Path(tmp) / "unpacked"
        with zipfile.ZipFile(archive) as zf:
            for name in zf.namelist():
                target = (unpacked / name).resolve()
                if not str(target).startswith(str(unpacked.resolve())):
                    raise PresdepError(f"{url}: unsafe path {name!r} in the archive")
            zf.extractall(unpacked)
        tops = [p for p in unpacked.iterdir() if p.is_dir()]
        folder = tops[0] if len(tops) == 1 else unpacked
        if not (folder / "corpus.jsonl").is_file():
            raise PresdepError(f"{url}: no corpus.jsonl in the archive; not a BEIR dataset zip")
        if dest.exists():
            shutil.rmtree(dest)
        folder.replace(dest)
    return dest


def _fetch(row: PlanRow, out: Path, argv: Sequence[str]) -> str:
    c = row.collection
    if row.route == "Pyserini":
        spec = pyserini_spec(row)
        run = fetch_pyserini_dataset(
            spec, out, depth=max(BM25S_DEPTH, c.first_stage.depth), argv=argv
        )
        build_fixture_pyserini(
            run,
            spec.index,
            str(out / "topics.tsv"),
            out / FIXTURE,
            qrels=str(out / "qrels.txt"),
            top_k=c.first_stage.depth,
        )
        update_files(out, {"fixture": FIXTURE, "fixture_run": run.name})
        return f"Pyserini {spec.index}: {spec.label}"
    if row.route == "BEIR zip + bm25s" and c.source.beir_url:
        folder = download_beir(c.source.beir_url, out / "beir")
        return _beir(folder, out, row, argv)
    raise PresdepError(f"{c.id}: unknown route {row.route!r}")


def materialise(
    row: PlanRow,
    *,
    root: str | Path = ".",
    data_root: str | Path = "data",
    force: bool = False,
    argv: Sequence[str] = (),
) -> Outcome:
    """Materialise one plan row (see the module doc); never raises for a skipped row."""
    c = row.collection
    root = Path(root)
    out = root / data_root / c.data_dir
    if row.status == "ready" and force and row.route_status is not None:
        row = replace(row, status=row.route_status)
    if row.status == "skip":
        return Outcome(c.id, "skipped", row.note or "skipped by the plan")
    if row.status == "blocked":
        return Outcome(c.id, "skipped", "missing now: " + ", ".join(row.missing))
    if row.status == "ready" and not force:
        return Outcome(c.id, "skipped", f"already materialised ({out / FIXTURE})")
    try:
        out.mkdir(parents=True, exist_ok=True)
        if row.status == "fetch":
            detail = _fetch(row, out, argv)
        elif row.local is None:
            return Outcome(c.id, "skipped", f"no route to rebuild it now ({row.route})")
        elif row.local.layout == "beir":
            detail = _beir(root / row.local.path, out, row, argv)
        elif row.local.layout == "rankllm_json":
            detail = _rankllm(row, root, out, argv)
        else:
            src = root / row.local.path / row.local.files.get("fixture", FIXTURE)
            n = _export(DataConfig(path=str(src), top_k=c.first_stage.depth), out / FIXTURE)
            detail = f"copied {src} ({n} queries, top-{c.first_stage.depth})"
    except PresdepError as e:
        return Outcome(c.id, "failed", str(e))
    except OSError as e:
        return Outcome(c.id, "failed", f"{type(e).__name__}: {e}")
    log.info("%s: %s", c.id, detail)
    return Outcome(c.id, "done", detail)
