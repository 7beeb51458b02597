"""Issue 16 (4): a failed start does not poison its run folder."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from presentation_dependence.cli import main as cli_main
from presentation_dependence.data.smoke import build_smoke_fixture

PLUGIN = '''
"""A reranker that fails on its first query when told to (a hosted 400, say)."""
from dataclasses import dataclass
from presentation_dependence.errors import PresdepError
from presentation_dependence.records import RankResult
from presentation_dependence.rerankers.base import RERANKERS, Paradigm, RerankerOptions

@dataclass(frozen=True)
class FlakyOptions(RerankerOptions):
    refuse: bool = False

@RERANKERS.register()
class RefusingReranker:
    paradigm = Paradigm.POINTWISE
    config_cls = FlakyOptions
    def __init__(self, options=None):
        self.options = options or FlakyOptions()
    def rank(self, query, candidates):
        if self.options.refuse:
            raise PresdepError("HTTP 400: max_tokens is too large")
        return RankResult.from_scores(query, candidates, [-c.rank for c in candidates])
    def describe(self):
        return {"reranker_class": "RefusingReranker"}
'''


@pytest.fixture()
def work(tmp_path, monkeypatch):
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "refusing_plugin.py").write_text(PLUGIN, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path / "plugins"))
    monkeypatch.chdir(tmp_path)
    build_smoke_fixture(tmp_path / "data")
    body = {
        "plugins": ["refusing_plugin"],
        "reranker": {"reranker_class": "RefusingReranker"},
        "data": {"dataloader_class": "FixtureLoader", "path": str(tmp_path / "data/fixture.jsonl")},
        "robustness": {"num_presentations": 2, "null_repeats": 2, "bootstrap_resamples": 100},
    }
    (tmp_path / "exp.yaml").write_text(yaml.safe_dump(body), encoding="utf-8")
    return tmp_path


def _run(work: Path, *overrides: str, command: str = "run") -> int:
    args = [command, str(work / "exp.yaml"), "--run-dir", str(work / "run")]
    for o in overrides:
        args += ["--override", o]
    return cli_main(args)


@pytest.mark.parametrize(
    "bad",
    [
        "data.dataloader_class=FixtureLoadr",
        "data.path=data/no-such-file.jsonl",
        "reranker.refuse=true",
    ],
)
@pytest.mark.parametrize("command", ["run", "psi"])
def test_a_corrected_rerun_is_accepted(work, bad, command):
    assert _run(work, bad, command=command) == 2
    assert _run(work, command=command) == 0
    assert (work / "run" / ("run.trec" if command == "run" else "psi/psi_metrics.json")).is_file()


def test_malformed_input_then_fixed(work):
    good = (work / "data" / "fixture.jsonl").read_text()
    (work / "data" / "fixture.jsonl").write_text(good + "{not json\n")
    assert _run(work) == 2
    assert not (work / "run" / "resolved_config.yaml").exists()
    (work / "data" / "fixture.jsonl").write_text(good)
    assert _run(work, "data.top_k=5") == 0


def test_from_scores_on_an_empty_folder_leaves_no_config(work):
    args = ["psi", str(work / "exp.yaml"), "--run-dir", str(work / "run"), "--from-scores"]
    assert cli_main(args) == 2
    assert not (work / "run" / "resolved_config.yaml").exists()


def test_a_folder_with_results_still_refuses_another_config(work, caplog):
    assert _run(work) == 0
    assert _run(work, "data.top_k=5") == 2
    assert "different config" in caplog.text


def test_any_writable_id_gets_a_safe_file_name(work):
    """Issue 16 (5): long, slashed or non-ASCII qids are stored, resumed and evaluated."""
    from presentation_dependence.io.fixture import read_fixture, write_fixture
    from presentation_dependence.records import Query, RerankRequest

    requests, qrels = read_fixture(work / "data" / "fixture.jsonl")
    qids = ["q" * 300, "a/b%2F..", "ünïcødé-" * 30, ".hidden"]
    renamed = [
        RerankRequest(Query(q, r.query.text), r.candidates)
        for q, r in zip(qids, requests, strict=False)
    ]
    judged = {q: qrels.judgements[r.query.qid] for q, r in zip(qids, requests, strict=False)}
    write_fixture(work / "data" / "fixture.jsonl", renamed, type(qrels)(judged))
    assert _run(work) == 0
    assert _run(work, command="psi") == 0
    names = [p.name for p in (work / "run").rglob("*")]
    assert all(len(n.encode()) <= 255 and "/" not in n for n in names)
    assert len(list((work / "run" / "per_query_results").iterdir())) == 4
    assert cli_main(["eval", "--run-dir", str(work / "run")]) == 0
    assert {
        line.split()[0] for line in (work / "run" / "run.trec").read_text().splitlines()
    } == set(qids)
