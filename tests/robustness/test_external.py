"""``presdep psi-runs``: the order metrics of any system from one TREC run per presentation.

The check: a PSI folder made by the project's own PSI runner on the tiny model, written out as
M runs per variant, gives back that folder's psi_metrics.json figures exactly.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from presentation_dependence.cli import main as cli_main
from presentation_dependence.cli.runs import _psi_runs_config
from presentation_dependence.io.fixture import write_fixture
from presentation_dependence.io.rankllm_json import read_rankllm_json, write_rankllm_json
from presentation_dependence.io.trec import write_qrels
from presentation_dependence.records import Candidate, Qrels, Query, RerankRequest
from presentation_dependence.robustness.external import (
    read_presentations,
    write_presentation_runs,
)

WORDS = ["flea", "egg", "host", "cat", "blood", "jump", "week", "larva", "skin", "bite"]


def _requests(n_queries: int = 3, n: int = 6) -> tuple[list[RerankRequest], Qrels]:
    rng = np.random.default_rng(1)
    reqs, qrels = [], {}
    for q in range(n_queries):
        qid = f"q{q}"
        cands = tuple(
            Candidate(f"{qid}-d{i}", " ".join(rng.choice(WORDS, size=8)), i + 1, float(n - i))
            for i in range(n)
        )
        reqs.append(RerankRequest(Query(qid, f"question {q} about fleas"), cands))
        qrels[qid] = {c.docid: int(rng.integers(0, 3)) for c in cands[:5]}  # one unjudged
    return reqs, Qrels(qrels)


@pytest.fixture(scope="module")
def psi_folder(tmp_path_factory, tiny_model) -> tuple[Path, Path]:
    """A PSI folder of the project's own runner (tiny model, 2 perturbations and the null)."""
    tmp = tmp_path_factory.mktemp("psi")
    reqs, qrels = _requests()
    write_fixture(tmp / "fixture.jsonl", reqs, qrels)
    body = {
        "reranker": {
            "reranker_class": "GradeReranker",
            "model_name": tiny_model,
            "device": "cpu",
            "dtype": "float32",
            "chunk_size": 6,
        },
        "data": {"dataloader_class": "FixtureLoader", "path": str(tmp / "fixture.jsonl")},
        "robustness": {
            "perturbations": ["random_shuffle", "cyclic_shift"],
            "num_presentations": 4,
            "null_repeats": 2,
            "bootstrap_resamples": 200,
            "retain_top_k": 3,
        },
    }
    cfg = tmp / "psi-tiny.yaml"
    cfg.write_text(yaml.safe_dump(body), encoding="utf-8")
    assert cli_main(["psi", str(cfg), "--run-dir", str(tmp / "run")]) == 0
    return cfg, tmp / "run"


def _runs_args(written: dict[str, list[Path]]) -> list[str]:
    out: list[str] = []
    for var, paths in written.items():
        out += ["--runs", var, *map(str, paths)]
    return out


def test_runs_reproduce_the_psi_runner_figures_exactly(psi_folder, tmp_path) -> None:
    cfg, run = psi_folder
    written = write_presentation_runs(run / "psi", tmp_path / "runs")
    assert {v: len(p) for v, p in written.items()} == {
        "random_shuffle": 4,
        "cyclic_shift": 4,
        "same_order": 2,
    }
    out = tmp_path / "external"
    presentations = run / "psi" / "presentations.json"
    argv = ["psi-runs", str(presentations), "--config", str(cfg), "--out", str(out), "--report"]
    assert cli_main([*argv, *_runs_args(written)]) == 0
    want = json.loads((run / "psi" / "psi_metrics.json").read_text())
    got = json.loads((out / "psi" / "psi_metrics.json").read_text())
    assert got["cost"] == {} and want["cost"]  # the system's cost is not in its runs
    del want["cost"], got["cost"]
    assert got == want
    assert (out / "report" / "report.md").is_file()
    assert (out / "psi" / "presentations.json").read_bytes() == presentations.read_bytes()


def test_write_requests_show_the_presented_order(psi_folder, tmp_path) -> None:
    cfg, run = psi_folder
    pres = read_presentations(run / "psi" / "presentations.json")
    argv = ["psi-runs", str(run / "psi" / "presentations.json"), "--config", str(cfg)]
    assert cli_main([*argv, "--write-requests", str(tmp_path / "req")]) == 0
    reqs, _ = _requests()
    shown = read_rankllm_json(tmp_path / "req" / "cyclic_shift" / "2.json")
    for given, req in zip(reqs, shown, strict=True):
        perm = pres.table[given.query.qid]["cyclic_shift"][2]
        assert [c.docid for c in req.candidates] == [given.candidates[i].docid for i in perm]
        assert [c.text for c in req.candidates] == [given.candidates[i].text for i in perm]


def test_candidates_file_and_from_ranks(psi_folder, tmp_path) -> None:
    """Without a config: candidates as rank_llm JSON with qrels; ranks instead of scores."""
    _, run = psi_folder
    reqs, qrels = _requests()
    cands = write_rankllm_json(reqs, tmp_path / "cands.json", layout="candidates")
    qrels_path = write_qrels(qrels, tmp_path / "qrels.txt")
    written = write_presentation_runs(run / "psi", tmp_path / "runs")
    out = tmp_path / "ranks"
    argv = ["psi-runs", str(run / "psi" / "presentations.json"), "--candidates", str(cands)]
    argv += ["--qrels", str(qrels_path), "--out", str(out), "--from-ranks"]
    assert cli_main([*argv, *_runs_args(written)]) == 0
    got = json.loads((out / "psi" / "psi_metrics.json").read_text())
    want = json.loads((run / "psi" / "psi_metrics.json").read_text())
    # Ranks keep the order: the same nDCG; scores differ, so score variance does not match.
    for var in ("random_shuffle", "same_order"):
        g, w = got["variants"][var]["per_query"], want["variants"][var]["per_query"]
        assert {q: v["ndcg_mean"] for q, v in g.items()} == pytest.approx(
            {q: v["ndcg_mean"] for q, v in w.items()}
        )


def test_refusals_name_the_problem(psi_folder, tmp_path, caplog) -> None:
    cfg, run = psi_folder
    written = write_presentation_runs(run / "psi", tmp_path / "runs")
    base = ["psi-runs", str(run / "psi" / "presentations.json"), "--out", str(tmp_path / "o")]
    no_null = {k: v for k, v in written.items() if k != "same_order"}
    assert cli_main([*base, "--config", str(cfg), *_runs_args(no_null)]) == 2
    assert "same_order" in caplog.text
    short = dict(written, random_shuffle=written["random_shuffle"][:3])
    assert cli_main([*base, "--config", str(cfg), *_runs_args(short)]) == 2
    assert "3 runs for 4 presentations" in caplog.text
    assert cli_main([*base, *_runs_args(written)]) == 2  # neither --config nor --candidates
    assert "one of the two" in caplog.text
    broken = tmp_path / "broken.trec"
    lines = written["same_order"][0].read_text().splitlines()[1:]  # drop one candidate
    broken.write_text("\n".join(lines) + "\n")
    bad = dict(written, same_order=[broken, written["same_order"][1]])
    assert cli_main([*base, "--config", str(cfg), *_runs_args(bad)]) == 2
    assert "missing" in caplog.text and str(broken) in caplog.text


def test_candidates_take_overrides(tmp_path) -> None:
    """``psi-runs --candidates FILE -o data.top_k=2``: the override reaches the data block (it
    was ignored before issue 40)."""
    reqs, _ = _requests()
    cands = write_rankllm_json(reqs, tmp_path / "cands.json", layout="candidates")
    args = argparse.Namespace(
        config=None, candidates=str(cands), qrels=None, override=["data.top_k=2"]
    )
    cfg = _psi_runs_config(args)
    assert cfg.data.top_k == 2 and cfg.data.dataloader_class == "RankLLMJsonLoader"


def test_write_requests_keep_a_rank_llm_doc_as_it_was(psi_folder, tmp_path) -> None:
    """A rank_llm file's ``doc`` (title and text apart) is written back as it was, not
    flattened to the one text field the scorers read (issue 40)."""
    _, run = psi_folder
    reqs, _ = _requests()
    items = [
        {
            "query": {"text": r.query.text, "qid": r.query.qid},
            "candidates": [
                {"docid": c.docid, "score": 1.0, "doc": {"title": f"T {c.docid}", "text": c.text}}
                for c in r.candidates
            ],
        }
        for r in reqs
    ]
    cands = tmp_path / "cands.json"
    cands.write_text(json.dumps(items))
    argv = ["psi-runs", str(run / "psi" / "presentations.json"), "--candidates", str(cands)]
    assert cli_main([*argv, "--write-requests", str(tmp_path / "req")]) == 0
    texts = {(r.query.qid, c.docid): c.text for r in reqs for c in r.candidates}
    files = sorted((tmp_path / "req").glob("*/*.json"))
    assert files
    for f in files:
        for q in json.loads(f.read_text()):
            for c in q["candidates"]:
                want = {"title": f"T {c['docid']}", "text": texts[(q["query"]["qid"], c["docid"])]}
                assert c["doc"] == want
