"""The per-query stage runner: sharding, resume, and the content check before a file is reused."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from presentation_dependence.config import load_experiment_config
from presentation_dependence.errors import PresdepError
from presentation_dependence.provenance import cpu_info, cpu_label
from presentation_dependence.records import Candidate, Query, RerankRequest
from presentation_dependence.runners import ExperimentManager
from presentation_dependence.runners.costs import UNIT_COSTS, phase_cost, units_by_processor
from presentation_dependence.runners.fingerprint import FINGERPRINT_KEY
from presentation_dependence.runners.run_folder import RunFolder, safe_file_stem
from presentation_dependence.runners.stage import (
    CONFIG_KEY,
    StoredInput,
    config_fingerprint,
    run_stage,
)


def _requests(docs: int = 3, prefix: str = "d") -> list[RerankRequest]:
    return [
        RerankRequest(
            Query(f"q{q}", f"question {q}"),
            tuple(Candidate(f"{prefix}{q}-{i}", f"text {q} {i}", i + 1, 0.0) for i in range(docs)),
        )
        for q in range(4)
    ]


class CountStage:
    """Writes each query's candidate ids and a salt; counts the queries it computed."""

    name = "test"
    unit = "query"

    def __init__(self, folder: RunFolder, salt: int = 0) -> None:
        self.folder = folder
        self.salt = salt
        self.config_sha256 = config_fingerprint({"salt": salt})
        self.computed: list[str] = []

    def path(self, qid: str) -> Path:
        return self.folder.path / "test" / f"{safe_file_stem(qid)}.json"

    def read_input(self, path: Path) -> StoredInput:
        rec = json.loads(path.read_text(encoding="utf-8"))
        return StoredInput(rec["docids"], rec.get(FINGERPRINT_KEY), rec.get(CONFIG_KEY))

    def stage_problem(self, req: RerankRequest, stored: StoredInput) -> str | None:
        return None

    def compute(self, req: RerankRequest) -> dict[str, Any]:
        self.computed.append(req.query.qid)
        return {"docids": [c.docid for c in req.candidates], "salt": self.salt}

    def write(self, path: Path, record: dict[str, Any], fingerprints: Mapping[str, str]) -> None:
        self.folder.write_json(path.relative_to(self.folder.path), {**record, **fingerprints})

    def describe(self) -> dict[str, Any]:
        return {"stage": "test"}


def _run(folder: RunFolder, stage: CountStage, requests: list[RerankRequest], **kw: Any):
    return run_stage(stage, folder, requests, desc="test", **kw)


def test_shards_fill_the_folder_and_a_rerun_reuses_everything(tmp_path):
    folder, reqs = RunFolder(tmp_path), _requests()
    first = _run(folder, CountStage(folder), reqs, shard=(0, 2))
    assert (first.computed, first.reused, first.complete) == (2, 0, False)
    second = _run(folder, CountStage(folder), reqs, shard=(1, 2))
    assert (second.computed, second.complete) == (2, True)
    again = CountStage(folder)
    summary = _run(folder, again, reqs)
    assert (summary.computed, summary.reused, again.computed) == (0, 4, [])
    prov = json.loads((tmp_path / "provenance.json").read_text())["invocations"]
    assert [p["shard"] for p in prov] == ["0/2", "1/2", None]
    assert prov[0]["phase"] == "test" and prov[0]["stage"] == "test"
    assert "stage" not in prov[2]  # nothing computed: nothing to describe


def test_a_file_from_another_config_is_not_reused(tmp_path, caplog):
    folder, reqs = RunFolder(tmp_path), _requests()
    _run(folder, CountStage(folder, salt=0), reqs)
    with pytest.raises(PresdepError, match=r"4 finished queries.*'q0': .*another config"):
        _run(folder, CountStage(folder, salt=1), reqs)
    other = CountStage(folder, salt=1)
    with caplog.at_level(logging.WARNING):
        summary = _run(folder, other, reqs, recompute_changed=True)
    assert (summary.computed, other.computed) == (4, ["q0", "q1", "q2", "q3"])
    assert "query 'q0' changed (it was computed with another config)" in caplog.text
    rec = json.loads(other.path("q0").read_text())
    assert rec["salt"] == 1 and rec[CONFIG_KEY] == config_fingerprint({"salt": 1})


def test_a_file_with_other_candidates_is_not_reused(tmp_path):
    folder = RunFolder(tmp_path)
    _run(folder, CountStage(folder), _requests())
    stage = CountStage(folder)
    (tmp_path / "stale.txt").write_text("derived\n")
    wider = _requests(docs=4)
    with pytest.raises(PresdepError, match="candidate ids differ"):
        _run(folder, stage, wider, stale=[tmp_path / "stale.txt"])
    assert stage.computed == [] and (tmp_path / "stale.txt").exists()
    _run(folder, stage, wider, recompute_changed=True, stale=[tmp_path / "stale.txt"])
    assert stage.computed == ["q0", "q1", "q2", "q3"]
    assert not (tmp_path / "stale.txt").exists()
    assert len(json.loads(stage.path("q2").read_text())["docids"]) == 4


def test_a_file_without_fingerprints_is_reused_on_its_ids(tmp_path):
    folder, reqs = RunFolder(tmp_path), _requests()
    first = CountStage(folder)
    _run(folder, first, reqs)
    for qid in ("q0", "q1", "q2", "q3"):
        path = first.path(qid)
        rec = json.loads(path.read_text())
        del rec[FINGERPRINT_KEY], rec[CONFIG_KEY]
        path.write_text(json.dumps(rec))
    again = CountStage(folder, salt=1)  # a legacy file cannot tell its config: ids decide
    assert _run(folder, again, reqs).reused == 4 and again.computed == []
    with pytest.raises(PresdepError, match="candidate ids differ"):
        _run(folder, again, _requests(prefix="x"))


def test_an_unreadable_file_is_named(tmp_path):
    folder, reqs = RunFolder(tmp_path), _requests()
    stage = CountStage(folder)
    _run(folder, stage, reqs)
    stage.path("q1").write_text("{not json")
    with pytest.raises(PresdepError, match=r"q1\.json is unreadable.*delete it"):
        _run(folder, stage, reqs)


@dataclass(frozen=True)
class _Block:
    a: int = 1
    b: list[int] = field(default_factory=list)


def test_config_fingerprint_ignores_fields_at_their_default():
    assert config_fingerprint({"x": _Block()}) == config_fingerprint({"x": {}})
    assert config_fingerprint({"x": _Block(a=2)}) == config_fingerprint({"x": {"a": 2}})
    assert config_fingerprint({"x": _Block(b=[3])}) != config_fingerprint({"x": _Block()})


PLUGIN = """
from dataclasses import dataclass
from presentation_dependence.records import RankResult
from presentation_dependence.rerankers.base import RERANKERS, Paradigm, RerankerOptions

@dataclass(frozen=True)
class SaltOptions(RerankerOptions):
    salt: int = 0

@RERANKERS.register()
class SaltReranker:
    paradigm = Paradigm.POINTWISE
    config_cls = SaltOptions
    def __init__(self, options=None):
        self.options = options or SaltOptions()
    def rank(self, query, candidates):
        n = len(candidates)
        return RankResult.from_scores(query, candidates, [(i * 7 + self.options.salt) % n for i in range(n)])
    def describe(self):
        return {"reranker_class": "SaltReranker", "salt": self.options.salt}
"""


def test_rerank_refuses_a_per_query_file_of_another_reranker_config(tmp_path, monkeypatch):
    from presentation_dependence.data.smoke import build_smoke_fixture

    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "salt_plugin.py").write_text(PLUGIN, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path / "plugins"))
    monkeypatch.chdir(tmp_path)
    build_smoke_fixture(tmp_path / "data")

    def cfg(salt: int):
        body = {
            "plugins": ["salt_plugin"],
            "reranker": {"reranker_class": "SaltReranker", "salt": salt},
            "data": {"dataloader_class": "FixtureLoader", "path": "data/fixture.jsonl"},
        }
        p = tmp_path / f"salt{salt}.yaml"
        p.write_text(yaml.safe_dump(body), encoding="utf-8")
        return load_experiment_config(p)

    ExperimentManager(cfg(0), tmp_path / "a").run()
    ExperimentManager(cfg(1), tmp_path / "b").run()
    mine = tmp_path / "a" / "per_query_results" / "smoke-2.json"
    original = mine.read_bytes()
    other = (tmp_path / "b" / "per_query_results" / "smoke-2.json").read_bytes()
    assert other != original
    mine.write_bytes(other)  # same query and candidates, another reranker config
    with pytest.raises(PresdepError, match="'smoke-2': it was computed with another config"):
        ExperimentManager(cfg(0), tmp_path / "a").run()
    summary = ExperimentManager(cfg(0), tmp_path / "a", recompute_changed=True).run()
    assert (summary.computed, summary.complete) == (1, True)
    assert mine.read_bytes() == original


def test_every_computed_query_records_its_cost_once_over_shards_and_resumes(tmp_path):
    folder, reqs = RunFolder(tmp_path), _requests()
    _run(folder, CountStage(folder), reqs, shard=(0, 2))
    partial = phase_cost(tmp_path, "test")
    assert partial is not None and (partial.units, partial.total, partial.complete) == (2, 4, False)
    _run(folder, CountStage(folder), reqs, shard=(1, 2))
    _run(folder, CountStage(folder), reqs)  # all reused: no line added
    lines = [json.loads(x) for x in (tmp_path / UNIT_COSTS).read_text().splitlines()]
    assert sorted(x["unit"] for x in lines) == ["q0", "q1", "q2", "q3"]
    assert {x["phase"] for x in lines} == {"test"} and {x["of"] for x in lines} == {4}
    whole = phase_cost(tmp_path, "test")
    assert whole is not None and whole.complete and whole.units == 4
    assert whole.seconds == pytest.approx(sum(x["seconds"] for x in lines))
    assert whole.cpu_seconds == pytest.approx(sum(x["cpu_seconds"] for x in lines))
    assert phase_cost(tmp_path, "psi") is None  # another phase: nothing recorded


def test_resuming_units_another_processor_computed_warns_and_counts_each(tmp_path, caplog):
    folder, reqs = RunFolder(tmp_path), _requests()
    _run(folder, CountStage(folder), reqs, shard=(0, 2))
    here = cpu_label(cpu_info())
    assert units_by_processor(tmp_path, "test") == {here: 2}
    lines = (tmp_path / UNIT_COSTS).read_text().splitlines()
    moved = [json.dumps({**json.loads(x), "cpu": "Other CPU [avx2 fma]"}) for x in lines]
    (tmp_path / UNIT_COSTS).write_text("\n".join(moved) + "\n")  # as if a lost machine made them
    with caplog.at_level(logging.WARNING, logger="presentation_dependence.runners.stage"):
        _run(folder, CountStage(folder), reqs)
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 1 and "2 of its test units" in warned[0]
    assert "2 on Other CPU [avx2 fma]" in warned[0] and here in warned[0]
    assert units_by_processor(tmp_path, "test") == {"Other CPU [avx2 fma]": 2, here: 2}
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="presentation_dependence.runners.stage"):
        _run(folder, CountStage(folder), reqs)  # nothing to compute: nothing to warn of
    assert not [r for r in caplog.records if r.levelno == logging.WARNING]


def _hold(folder: RunFolder, key: str, *, then_write: CountStage | None) -> tuple[Any, Any]:
    """Hold ``test:key`` in a thread, as another process would; released (after writing the
    unit when ``then_write`` is given, else as a process that died) once ``release`` is set."""
    held, release = threading.Event(), threading.Event()

    def holder() -> None:
        with folder.claim(f"test:{key}") as ok:
            assert ok
            held.set()
            release.wait(30)
            if then_write is not None:
                req = next(r for r in _requests() if r.query.qid == key)
                then_write.write(then_write.path(key), then_write.compute(req), {})

    thread = threading.Thread(target=holder)
    thread.start()
    assert held.wait(30)
    return thread, release


@pytest.mark.parametrize("other_writes", [True, False], ids=["other-finishes", "other-dies"])
def test_waiting_for_others_returns_complete_and_takes_over_an_abandoned_unit(
    tmp_path, other_writes
):
    folder, reqs = RunFolder(tmp_path), _requests()
    other = CountStage(folder)
    thread, release = _hold(folder, "q2", then_write=other if other_writes else None)
    left = CountStage(folder)
    alone = _run(folder, left, reqs)  # without waiting: the held unit is left to its holder
    assert (alone.complete, left.computed) == (False, ["q0", "q1", "q3"])
    timer = threading.Timer(0.3, release.set)  # the holder lets go while this one waits
    timer.start()
    waiter = CountStage(folder)
    summary = _run(folder, waiter, reqs, wait_for_others=True)
    thread.join(30)
    assert summary.complete
    assert waiter.computed == ([] if other_writes else ["q2"])
    assert other.computed == (["q2"] if other_writes else [])
