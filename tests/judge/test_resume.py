"""Issue 16 (10), issue 15: the judge sweep and the noise reruns are written part by part and
resumable (run_units), also from a folder of the old part layout; a part is reused only for its
requests, judge and config; processes sharing --out judge each part once; --out refuses a folder
of another config; ``presdep eval`` tells a missing folder from an unfinished run."""

from __future__ import annotations

import json

import pytest
import yaml

from presentation_dependence.cli import main
from presentation_dependence.judge.config import load_judge_config
from presentation_dependence.judge.items.records import JudgeRecord, write_records
from presentation_dependence.judge.judges.scripted import ScriptedJudge
from presentation_dependence.judge.runner import run_judge_task, run_noise_task
from presentation_dependence.runners.run_folder import RunFolder

from .conftest import noise_outputs
from .test_cli import config


class _Killed(Exception):
    pass


def test_a_killed_sweep_resumes_to_identical_records(tmp_path, items_file, monkeypatch):
    cfg = config(tmp_path, items_file)
    assert main(["judge", str(cfg), "--out", str(tmp_path / "ref")]) == 0

    real = ScriptedJudge.judge
    calls: list[int] = []

    def dies_on_the_fifth_call(self, requests, **kw):
        calls.append(len(requests))
        if len(calls) == 5:
            raise _Killed  # the process dies part-way
        return real(self, requests, **kw)

    monkeypatch.setattr(ScriptedJudge, "judge", dies_on_the_fifth_call)
    with pytest.raises(_Killed):
        run_judge_task(load_judge_config(cfg), tmp_path / "killed")
    parts = sorted((tmp_path / "killed" / "records_parts").glob("part*.json"))
    assert len(parts) == 4 and calls == [4] * 5  # one item (4 placements) per part

    calls.clear()

    def counts(self, requests, **kw):
        calls.append(len(requests))
        return real(self, requests, **kw)

    monkeypatch.setattr(ScriptedJudge, "judge", counts)
    assert main(["judge", str(cfg), "--out", str(tmp_path / "killed")]) == 0
    assert len(calls) == 12 - 4  # only the items not judged before
    for name in ("records.jsonl", "summary.json", "report.md"):
        assert (tmp_path / "killed" / name).read_bytes() == (tmp_path / "ref" / name).read_bytes()


def test_out_refuses_a_folder_of_another_config(tmp_path, items_file, caplog):
    cfg = config(tmp_path, items_file)
    out = tmp_path / "out"
    assert main(["judge", str(cfg), "--out", str(out)]) == 0
    before = (out / "records.jsonl").read_bytes()
    assert main(["judge", str(cfg), "--out", str(out), "--override", "seed=7"]) == 2
    assert "different config" in caplog.text and "+seed: 7" in caplog.text  # with the diff
    assert (out / "records.jsonl").read_bytes() == before
    assert main(["judge", str(cfg), "--out", str(out)]) == 0  # the same config resumes
    runs = json.loads((out / "provenance.json").read_text())["invocations"]
    assert len(runs) == 2 and runs[0]["judge"]["judge_class"] == "scripted"
    assert runs[1]["queries"]["reused"] == 12 and "judge" not in runs[1]  # nothing judged


def test_a_folder_frozen_before_an_option_existed_still_resumes(tmp_path, items_file):
    cfg = config(tmp_path, items_file)
    out = tmp_path / "out"
    assert main(["judge", str(cfg), "--out", str(out)]) == 0
    frozen = out / "resolved_config.yaml"
    old = yaml.safe_load(frozen.read_text())
    del old["bootstrap_resamples"], old["judge"]["seed"]  # at their defaults
    frozen.write_text(yaml.safe_dump(old))
    assert main(["judge", str(cfg), "--out", str(out)]) == 0


def test_an_old_flat_provenance_is_read_and_appended_to(tmp_path, items_file):
    from presentation_dependence.studies.judge_docs import measured_markdown

    cfg = config(tmp_path, items_file)
    out = tmp_path / "n"
    assert main(["noise", str(cfg), "--out", str(out), "--batch-sizes", "1", "2"]) == 0
    prov = out / "provenance.json"
    (flat,) = json.loads(prov.read_text())["invocations"]
    prov.write_text(json.dumps(flat))  # as judge folders were written before issue 15
    assert "uv run presdep noise" in measured_markdown(out)
    assert main(["noise", str(cfg), "--out", str(out), "--batch-sizes", "1", "2"]) == 0
    assert json.loads(prov.read_text())["invocations"][0] == flat
    assert flat["time_utc"] in measured_markdown(out)  # the first invocation's


def test_eval_tells_a_missing_folder_from_an_unfinished_run(tmp_path, caplog):
    assert main(["eval", "--run-dir", str(tmp_path / "nowhere")]) == 2
    assert "does not exist" in caplog.text and "unfinished" not in caplog.text
    caplog.clear()
    (tmp_path / "empty").mkdir()
    assert main(["eval", "--run-dir", str(tmp_path / "empty")]) == 2
    assert "not a run folder" in caplog.text and "unfinished" not in caplog.text
    caplog.clear()
    (tmp_path / "empty" / "resolved_config.yaml").write_text("id: x\n")
    assert main(["eval", "--run-dir", str(tmp_path / "empty")]) == 2
    assert "unfinished" in caplog.text


def _counted(monkeypatch, die_on: int | None = None) -> list[int]:
    """Count the scripted judge's calls (their sizes); with ``die_on``, die on that call."""
    real, calls = ScriptedJudge.judge, []

    def judge(self, requests, **kw):
        calls.append(len(requests))
        if len(calls) == die_on:
            raise _Killed
        return real(self, requests, **kw)

    monkeypatch.setattr(ScriptedJudge, "judge", judge)
    return calls


def test_a_killed_noise_run_resumes_to_identical_runs(tmp_path, items_file, monkeypatch):
    cfg = config(tmp_path, items_file)
    args = ["noise", str(cfg), "--batch-sizes", "1", "8", "--one-at-a-time", "--repeats", "2"]
    assert main([*args, "--out", str(tmp_path / "ref")]) == 0
    calls = _counted(monkeypatch, die_on=20)
    conditions = ["noise.batch_sizes=[1, 8]", "noise.one_at_a_time=true", "noise.repeats=2"]
    with pytest.raises(_Killed):
        run_noise_task(load_judge_config(cfg, conditions), tmp_path / "killed")
    assert not (tmp_path / "killed" / "noise.json").exists()
    monkeypatch.undo()
    calls = _counted(monkeypatch)
    assert main([*args, "--out", str(tmp_path / "killed")]) == 0
    # batch_size=1 and one at a time: 12 one-item parts a run; batch_size=8: 6 two-item parts
    assert sum(calls) == 3 * 2 * 48 - 19 * 4 and calls[0] == 4  # resumed at the part in flight
    assert len(list((tmp_path / "killed" / "noise" / "batch_size8" / "run0").glob("*.json"))) == 6
    assert noise_outputs(tmp_path / "killed") == noise_outputs(tmp_path / "ref")
    invocations = json.loads((tmp_path / "killed" / "provenance.json").read_text())["invocations"]
    assert [i["queries"]["reused"] for i in invocations] == [0, 19]


def test_a_folder_of_the_old_part_layout_resumes_without_rejudging(
    tmp_path, items_file, monkeypatch, caplog
):
    cfg = config(tmp_path, items_file)
    ref, old = tmp_path / "ref", tmp_path / "old"
    assert main(["judge", str(cfg), "--out", str(ref)]) == 0
    old.mkdir()
    (old / "resolved_config.yaml").write_bytes((ref / "resolved_config.yaml").read_bytes())
    (flat,) = json.loads((ref / "provenance.json").read_text())["invocations"]
    (old / "provenance.json").write_text(json.dumps(flat))
    (old / "records_parts").mkdir()
    for path in sorted((ref / "records_parts").glob("part*.json"))[:7]:  # killed after 7 items
        part = json.loads(path.read_text())
        recs = [JudgeRecord.from_dict(r) for r in part["records"]]
        write_records(old / "records_parts" / f"{path.stem}.jsonl", recs)
        (old / "records_parts" / "identity.json").write_text(json.dumps(part["judge"]))
    calls = _counted(monkeypatch)
    assert main(["judge", str(cfg), "--out", str(old)]) == 0
    assert calls == [4] * 5  # only the 5 items missing
    for name in ("records.jsonl", "summary.json", "report.md"):
        assert (old / name).read_bytes() == (ref / name).read_bytes()
    assert len(list((old / "records_parts").glob("*.jsonl"))) == 7
    ident = json.loads((old / "records_parts" / "identity.json").read_text())
    (old / "records_parts" / "identity.json").write_text(json.dumps({**ident, "seed": 9}))
    assert main(["judge", str(cfg), "--out", str(old)]) == 2
    assert "7 finished parts" in caplog.text and "another judge identity" in caplog.text


def test_parts_of_other_items_are_refused(tmp_path, items_file, caplog):
    cfg = config(tmp_path, items_file)
    out = tmp_path / "out"
    assert main(["judge", str(cfg), "--out", str(out)]) == 0
    items_file.write_text(items_file.read_text().replace("What is 3 + 3?", "What is 3 plus 3?"))
    assert main(["judge", str(cfg), "--out", str(out)]) == 2
    assert "1 finished parts" in caplog.text
    assert "'records_parts/part00003': the items' prompts or responses differ" in caplog.text


def test_a_part_another_process_holds_is_left_to_it(tmp_path, items_file, monkeypatch):
    cfg = config(tmp_path, items_file)
    out = tmp_path / "out"
    assert main(["judge", str(cfg), "--out", str(tmp_path / "ref")]) == 0
    calls = _counted(monkeypatch)
    with RunFolder(out).claim("judge:records_parts/part00002") as held:
        assert held  # as if another process were judging item 3
        assert main(["judge", str(cfg), "--out", str(out)]) == 0
    assert len(calls) == 11 and not (out / "records.jsonl").exists()  # written once all are done
    assert main(["judge", str(cfg), "--out", str(out)]) == 0
    assert len(calls) == 12
    assert (out / "records.jsonl").read_bytes() == (tmp_path / "ref" / "records.jsonl").read_bytes()


def test_a_killed_study_rerun_resumes_at_the_part_in_flight(tmp_path, items_file, monkeypatch):
    from presentation_dependence.studies.judge_run import run_study_config

    cfg = load_judge_config(config(tmp_path, items_file))
    run_study_config(cfg, tmp_path / "ref", [], rerun=True, gate=False)
    run_judge_task(cfg, tmp_path / "killed" / cfg.id)  # the sweep; its rerun is killed
    _counted(monkeypatch, die_on=5)
    with pytest.raises(_Killed):
        run_study_config(cfg, tmp_path / "killed", [], rerun=True, gate=False)
    monkeypatch.undo()
    calls = _counted(monkeypatch)
    run_study_config(cfg, tmp_path / "killed", [], rerun=True, gate=False)
    assert calls == [4] * (12 - 4)  # run 1 of the rerun (run 0 is the sweep), from item 5 on
    ref, killed = tmp_path / "ref" / cfg.id / "rerun", tmp_path / "killed" / cfg.id / "rerun"
    assert noise_outputs(killed) == noise_outputs(ref)


def test_a_killed_rank_task_resumes_at_the_item_in_flight(tmp_path, items_file, monkeypatch):
    from presentation_dependence.rerankers.identity import IdentityReranker

    cfg = config(tmp_path, items_file, task="rank", reranker={"reranker_class": "IdentityReranker"})
    assert main(["judge", str(cfg), "--out", str(tmp_path / "ref")]) == 0
    real = IdentityReranker.rank
    calls: list[str] = []

    def dies_on_item_five(self, query, candidates):
        if query.qid not in calls:
            calls.append(query.qid)
        if len(calls) == 5:
            raise _Killed
        return real(self, query, candidates)

    monkeypatch.setattr(IdentityReranker, "rank", dies_on_item_five)
    with pytest.raises(_Killed):
        run_judge_task(load_judge_config(cfg), tmp_path / "killed")
    assert len(list((tmp_path / "killed" / "items").glob("item*.json"))) == 4

    calls.clear()
    monkeypatch.setattr(IdentityReranker, "rank", real)
    ranked: list[str] = []

    def counts(self, query, candidates):
        ranked.append(query.qid)
        return real(self, query, candidates)

    monkeypatch.setattr(IdentityReranker, "rank", counts)
    assert main(["judge", str(cfg), "--out", str(tmp_path / "killed")]) == 0
    assert len(set(ranked)) == 12 - 4  # only the items not ranked before
    for name in ("ranking_items.jsonl", "ranking_summary.json", "report.md"):
        assert (tmp_path / "killed" / name).read_bytes() == (tmp_path / "ref" / name).read_bytes()
    # an item file of another item is refused, not silently reused
    first = tmp_path / "killed" / "items" / "item00000.json"
    stored = json.loads(first.read_text())
    stored["record"]["item_id"] = "other"
    first.write_text(json.dumps(stored))
    for name in ("ranking_summary.json",):
        (tmp_path / "killed" / name).unlink()
    assert main(["judge", str(cfg), "--out", str(tmp_path / "killed")]) == 2
