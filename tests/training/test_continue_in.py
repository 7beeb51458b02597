"""Finishing a resumed run in another dtype (``presdep train`` and ``train-judge --continue-in``;
tiny model, peft).

A run paused in float32 and continued in bfloat16 trains on from its checkpoint to the full
schedule: the student is loaded in bfloat16, the frozen config keeps the config's dtype, and the
resume event of ``train_log.jsonl`` and the provenance record the dtype; with nothing to
continue (no checkpoint, or ``--restart``) it is refused with the fix.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

pytest.importorskip("peft")

from presentation_dependence.cli import main
from presentation_dependence.errors import ConfigError
from presentation_dependence.training import judge_heldout
from presentation_dependence.training.config import training_config_from_raw
from presentation_dependence.training.export import training_record
from presentation_dependence.training.judge_config import judge_training_config_from_raw
from presentation_dependence.training.judge_trainer import train_judge
from presentation_dependence.training.progress import TRAIN_LOG
from presentation_dependence.training.silver import SilverSet
from presentation_dependence.training.trainer import train_student
from tests.training.test_judge_training import raw_cfg as judge_raw
from tests.training.test_judge_training import synthetic_items
from tests.training.test_resume import raw_cfg


def _events(out: Path) -> list[dict[str, object]]:
    lines = (out / TRAIN_LOG).read_text(encoding="utf-8").splitlines()
    return [x for x in map(json.loads, lines) if x.get("event") == "resume"]


def test_a_paused_run_continues_in_another_dtype(
    tiny_model: str, silver_file: Path, silver: SilverSet, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    raw = raw_cfg(tiny_model, silver_file, out, epochs=2)
    raw["train"]["keep_snapshots"] = True
    cfg = training_config_from_raw(raw, "continue-test")
    paused = train_student(cfg, silver=silver, pause_at=2)
    assert paused.paused and paused.student is not None
    assert paused.student.describe()["dtype"] == "float32"

    done = train_student(cfg, silver=silver, continue_in="bfloat16")
    assert done.resumed_from_step == 2 and done.global_step == 6 and not done.paused
    assert done.student is not None and done.student.describe()["dtype"] == "bfloat16"
    frozen = yaml.safe_load((out / "resolved_config.yaml").read_text(encoding="utf-8"))
    assert frozen["student"]["dtype"] == "float32"  # the recipe as configured
    events = _events(out)
    assert events[-1]["step"] == 2 and events[-1]["continued_in"] == "bfloat16"
    prov = json.loads((out / "provenance.json").read_text(encoding="utf-8"))
    last = prov["invocations"][-1]
    assert last["continued_in"] == "bfloat16" and last["resumed_from_step"] == 2
    assert last["student"]["dtype"] == "bfloat16"
    record = training_record(cfg, out)  # what a model card says about it
    assert record["dtype"] == "float32 (steps 1-2), bfloat16 (from step 3: continued in bfloat16)"
    assert record["resumed_from_step"] == 2


def test_continue_in_needs_a_run_to_continue(
    tiny_model: str, silver_file: Path, tmp_path: Path
) -> None:
    cfg = training_config_from_raw(raw_cfg(tiny_model, silver_file, tmp_path / "new"), "c")
    with pytest.raises(ConfigError, match=r"has no checkpoint\. Fix: set the config.s dtype"):
        train_student(cfg, continue_in="float32")
    with pytest.raises(ConfigError, match="--restart trains from scratch"):
        train_student(cfg, continue_in="float32", restart=True)
    with pytest.raises(ConfigError, match="name a dtype"):
        train_student(cfg, continue_in="auto")
    assert not (tmp_path / "new" / "resolved_config.yaml").exists()  # refused before freezing

    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(raw_cfg(tiny_model, silver_file, tmp_path / "cli")))
    assert main(["train", str(path), "--continue-in", "float32"]) != 0
    with pytest.raises(SystemExit):  # argparse: not a choice
        main(["train", str(path), "--continue-in", "int8"])


def test_a_paused_judge_continues_in_another_dtype_held_out_points_served_in_it(
    tiny_model: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``presdep train-judge --continue-in``: the judge resumes in the new dtype, its held-out
    points after the resume are served in it (each point says in which), the frozen config keeps
    the configured dtype, and the provenance records the switch; refused with nothing to
    continue."""
    monkeypatch.setattr(judge_heldout, "heldout_items", lambda cfg: synthetic_items(2))
    out = tmp_path / "judge"
    raw = judge_raw(tiny_model, out, max_steps=4, save_steps=2, keep_snapshots=True)
    raw["early_stopping"] = {"patience": 5, "placements": "full"}
    cfg = judge_training_config_from_raw(raw, "judge-continue")
    with pytest.raises(ConfigError, match="has no checkpoint"):
        train_judge(cfg, items=synthetic_items(4), continue_in="bfloat16")

    paused = train_judge(cfg, items=synthetic_items(4), pause_at=2)
    assert paused.paused
    done = train_judge(cfg, items=synthetic_items(4), continue_in="bfloat16")
    assert done.resumed_from_step == 2 and done.global_step == 4
    assert done.model is not None and done.model.describe()["dtype"] == "bfloat16"
    points = {
        s: json.loads((out / "curve" / f"step-{s:06d}.json").read_text())["point"] for s in (2, 4)
    }
    assert (points[2]["dtype"], points[4]["dtype"]) == ("float32", "bfloat16")
    frozen = yaml.safe_load((out / "resolved_config.yaml").read_text(encoding="utf-8"))
    assert frozen["judge"]["dtype"] == "float32"
    assert _events(out)[-1]["continued_in"] == "bfloat16"
    last = json.loads((out / "provenance.json").read_text(encoding="utf-8"))["invocations"][-1]
    assert last["continued_in"] == "bfloat16" and last["resumed_from_step"] == 2
