"""Issue 16 (10): the judge sweep is written per item and resumable; --out refuses a folder of
another config; ``presdep eval`` tells a missing folder from an unfinished run."""

from __future__ import annotations

import json

import pytest
import yaml

from presentation_dependence.cli import main
from presentation_dependence.judge.scripted import ScriptedJudge

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
        from presentation_dependence.judge.config import load_judge_config
        from presentation_dependence.judge.runner import run_judge_task

        run_judge_task(load_judge_config(cfg), tmp_path / "killed")
    parts = sorted((tmp_path / "killed" / "records_parts").glob("*.jsonl"))
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
    assert len(runs) == 2 and all(r["judge"]["judge_class"] == "scripted" for r in runs)


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
    from presentation_dependence.judge.docs import measured_markdown

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
