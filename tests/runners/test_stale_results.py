"""Issue 16 (1): a changed query text, passage text or judgement is never silently reused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from presentation_dependence.config import load_experiment_config
from presentation_dependence.data.smoke import build_smoke_fixture
from presentation_dependence.errors import PresdepError
from presentation_dependence.io.fixture import read_fixture, write_fixture
from presentation_dependence.records import Candidate, Qrels, Query, RerankRequest
from presentation_dependence.runners import EvalManager, ExperimentManager

PLUGIN = '''
"""Scores depend on the query and passage texts (so a changed text changes the ranking)."""
import zlib
from dataclasses import dataclass
from presentation_dependence.records import RankResult
from presentation_dependence.rerankers.base import RERANKERS, Paradigm, RerankerOptions

@dataclass(frozen=True)
class TextHashOptions(RerankerOptions):
    pass

@RERANKERS.register()
class TextHashReranker:
    paradigm = Paradigm.POINTWISE
    config_cls = TextHashOptions
    def __init__(self, options=None):
        self.options = options or TextHashOptions()
    def rank(self, query, candidates):
        scores = [zlib.crc32((query.text + "|" + c.text).encode()) % 997 for c in candidates]
        return RankResult.from_scores(query, candidates, scores)
    def describe(self):
        return {"reranker_class": "TextHashReranker"}
'''


@pytest.fixture()
def work(tmp_path, monkeypatch):
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "texthash_plugin.py").write_text(PLUGIN, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path / "plugins"))
    monkeypatch.chdir(tmp_path)
    build_smoke_fixture(tmp_path / "data")
    return tmp_path


def _config(root: Path, path: object) -> Path:
    body = {
        "plugins": ["texthash_plugin"],
        "reranker": {"reranker_class": "TextHashReranker"},
        "data": {"dataloader_class": "FixtureLoader", "path": path},
        "eval": {"measures": ["ndcg@10"]},
    }
    p = root / "exp.yaml"
    p.write_text(yaml.safe_dump(body), encoding="utf-8")
    return p


def _edit(
    fixture: Path,
    out: Path,
    *,
    query: str | None = None,
    passage: str | None = None,
    regrade: bool = False,
) -> Path:
    """A copy of ``fixture`` with query smoke-3's text, first passage or a judgement changed."""
    requests, qrels = read_fixture(fixture)
    judgements = {q: dict(d) for q, d in qrels.judgements.items()}
    edited = []
    for r in requests:
        if r.query.qid == "smoke-3":
            q = Query(r.query.qid, query) if query is not None else r.query
            cands = list(r.candidates)
            if passage is not None:
                c = cands[0]
                cands[0] = Candidate(c.docid, passage, c.rank, c.score)
            r = RerankRequest(q, tuple(cands))
            if regrade:
                docid = r.candidates[0].docid
                judgements["smoke-3"][docid] = (judgements["smoke-3"].get(docid, 0) + 1) % 4
        edited.append(r)
    return write_fixture(out, edited, Qrels(judgements))


def _run(cfg_path: Path, run_dir: Path, **kw: object):
    summary = ExperimentManager(load_experiment_config(cfg_path), run_dir, **kw).run()
    return summary, (EvalManager(run_dir).evaluate() if summary.complete else None)


@pytest.mark.parametrize(
    ("change", "what"),
    [({"query": "a different question"}, "query text"), ({"passage": "other words"}, "passage")],
)
def test_changed_texts_are_refused_or_recomputed(work, change, what):
    """The config is unchanged; the file it names now holds other content."""
    data = work / "data" / "fixture.jsonl"
    cfg = _config(work, str(data))
    _run(cfg, work / "run")
    _edit(data, data, **change)
    with pytest.raises(PresdepError, match="smoke-3") as e:
        _run(cfg, work / "run")
    assert what in str(e.value) and "--recompute-changed" in str(e.value)
    summary, metrics = _run(cfg, work / "run", recompute_changed=True)
    assert (summary.computed, summary.reused) == (1, 5)
    _, fresh = _run(cfg, work / "fresh")
    assert metrics == fresh
    assert (work / "run" / "run.trec").read_bytes() == (work / "fresh" / "run.trec").read_bytes()


def test_changed_judgements_are_refused_or_replaced(work):
    data = work / "data" / "fixture.jsonl"
    cfg = _config(work, str(data))
    _run(cfg, work / "run")
    _edit(data, data, regrade=True)
    with pytest.raises(PresdepError, match="smoke-3") as e:
        _run(cfg, work / "run")
    assert "judgements" in str(e.value)
    summary, metrics = _run(cfg, work / "run", recompute_changed=True)
    assert summary.computed == 0  # the rankings do not depend on the judgements
    _, fresh = _run(cfg, work / "fresh")
    assert metrics == fresh
    assert (work / "run" / "qrels.txt").read_bytes() == (work / "fresh" / "qrels.txt").read_bytes()


def test_path_alternatives_are_recorded_and_a_switch_is_caught(work, caplog):
    """Fetching data/ under an unchanged config switches the input: recorded, and checked."""
    shared = work / "data" / "fixture.jsonl"
    local = work / "local" / "fixture.jsonl"
    cfg = _config(work, [str(local), str(shared)])
    _run(cfg, work / "run")
    frozen = (work / "run" / "resolved_config.yaml").read_text()
    assert f"data.path -> {shared.resolve()}" in frozen
    prov = json.loads((work / "run" / "provenance.json").read_text())
    assert prov["invocations"][0]["data_paths"] == {"path": str(shared.resolve())}
    _edit(shared, local, query="fetched later, different")
    with pytest.raises(PresdepError, match="smoke-3"):
        _run(cfg, work / "run")
    assert f"data.path now resolves to {local.resolve()}" in caplog.text


def test_legacy_results_without_a_fingerprint_are_still_reused(work):
    data = work / "data" / "fixture.jsonl"
    cfg = _config(work, str(data))
    _run(cfg, work / "run")
    for p in (work / "run" / "per_query_results").glob("*.json"):
        rec = json.loads(p.read_text())
        rec.pop("request_sha256")
        p.write_text(json.dumps(rec, indent=1, ensure_ascii=False) + "\n")
    summary, _ = _run(cfg, work / "run")
    assert (summary.computed, summary.reused) == (0, 6)
