"""A tiny study tree in a temporary folder: one population, one task, local copies of data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]


def write_beir(folder: Path) -> Path:
    docs = [
        {"_id": "d1", "title": "Solar power", "text": "Solar panels convert sunlight into power."},
        {"_id": "d2", "title": "", "text": "Wind turbines convert wind into power."},
        {"_id": "d3", "title": "Bread", "text": "A recipe for bread and butter."},
        {"_id": "d4", "title": "Rivers", "text": "Hydro power from rivers."},
    ]
    folder.mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    queries = [{"_id": "q1", "text": "solar power"}, {"_id": "q2", "text": "wind power"}]
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (folder / "qrels").mkdir()
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t2\nq2\td2\t1\n")
    return folder


def write_rankllm(folder: Path) -> Path:
    folder.mkdir(parents=True)
    items = [
        {
            "query": "what is rain",
            "hits": [
                {
                    "qid": "7",
                    "docid": f"p{i}",
                    "content": f"passage {i} about rain",
                    "rank": i,
                    "score": 10.0 - i,
                }
                for i in range(1, 4)
            ],
        }
    ]
    (folder / "cands.json").write_text(json.dumps(items))
    (folder / "qrels.txt").write_text("7 0 p2 2\n7 0 p3 0\n")
    (folder / "run.trec").write_text(
        "".join(f"7 Q0 p{i} {i} {10.0 - i} bm25\n" for i in range(1, 4))
    )
    return folder


def _collection(cid: str, **kw: object) -> dict:
    base = {
        "id": cid,
        "name": cid.upper(),
        "family": "beir",
        "data_dir": f"dd-{cid}",
        "licence": "test licence",
        "first_stage": {"retriever": "bm25s", "label": "bm25s", "depth": 3},
    }
    base.update(kw)
    return base


@pytest.fixture
def study_root(tmp_path: Path) -> Path:
    """A repository-like root with population 'tiny' and task 'tiny-task' (IdentityReranker)."""
    root = tmp_path / "repo"
    write_beir(root / "corpora" / "beirlike")
    write_rankllm(root / "corpora" / "rl")
    pop = {
        "population": "tiny",
        "description": "test population",
        "collections": [
            _collection(
                "local-beir",
                aliases=["lb"],
                local=[
                    {"path": "corpora/beirlike", "layout": "beir", "first_stage": "none: bm25s"}
                ],
            ),
            _collection(
                "local-rl",
                family="trec-dl",
                relevance_level=2,
                local=[
                    {
                        "path": "corpora/rl",
                        "layout": "rankllm_json",
                        "files": {
                            "candidates": "cands.json",
                            "qrels": "qrels.txt",
                            "run": "run.trec",
                        },
                        "first_stage": "copied BM25",
                    }
                ],
            ),
            _collection(
                "remote",
                needs={"network": True, "java": True},
                source={"pyserini": {"index": "idx", "topics": "t", "qrels": "q"}},
                first_stage={
                    "retriever": "pyserini-bm25",
                    "k1": 0.9,
                    "b": 0.4,
                    "label": "BM25",
                    "depth": 3,
                },
            ),
            _collection(
                "gated-one",
                needs={"network": True, "gated": True},
                source={"homepage": "https://example.org"},
                notes="needs an agreement",
            ),
            _collection(
                "private", distributed=False, needs={"manual": True}, notes="never released"
            ),
        ],
    }
    pdir = root / "configs" / "reproduction" / "populations"
    pdir.mkdir(parents=True)
    (pdir / "tiny.yaml").write_text(yaml.safe_dump(pop, sort_keys=False))
    task = {
        "task": "tiny-task",
        "population": "tiny",
        "output_root": "runs/study",
        "eval": {"measures": ["ndcg@10"]},
        "rerankers": [{"id": "given", "reranker": {"reranker_class": "IdentityReranker"}}],
        "stages": [
            {
                "id": "rerank",
                "command": "python -m presentation_dependence.cli run {config} --run-dir {run_dir} --eval",
            },
            {
                "id": "record",
                "command": "python "
                + str(REPO / "scripts" / "record_result.py")
                + " {run_dir} --index idx.yaml",
            },
            {"id": "echo", "per_job": False, "command": "python -c \"print('{task}')\" {run_dirs}"},
        ],
    }
    tdir = root / "configs" / "reproduction" / "tasks"
    tdir.mkdir(parents=True)
    (tdir / "tiny-task.yaml").write_text(yaml.safe_dump(task, sort_keys=False))
    return root
