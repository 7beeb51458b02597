"""Reliability cases: training a student as a hostile user would (issue 38).

Each case makes the tiny random model (:mod:`presdep_tools.testing.tiny_model`),
silver labels of its own (``presdep silver``: the tiny model teaches 3 smoke-fixture queries)
and trains with ``presdep train`` in this process (one subprocess for the concurrent trainer):
a non-finite label or checkpoint, stale silver labels, data or base weights, another command's
run folder as ``output_dir``, two trainers on one folder. The observed text holds no temporary
path or process id, so the document is the same from run to run.
"""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path
from typing import Any

import yaml

from presdep_tools.reliability import Case
from presdep_tools.reliability.workspace import Workspace, expect
from presdep_tools.testing.tiny_model import make_tiny_model

__all__ = ["TRAINING_CASES"]


class _Trainer:
    """A workspace with the tiny model, a training config ``tr.yaml`` and its silver labels."""

    def __init__(self, root: Path, **train: Any) -> None:
        self.ws = Workspace(root)
        self.root = root
        self.model = make_tiny_model(root / "tiny")
        block = {
            "reranker_class": "GradeReranker",
            "model_name": str(self.model),
            "device": "cpu",
            "dtype": "float32",
            "chunk_size": 8,
            "max_passage_chars": 120,
        }
        data = {"dataloader_class": "FixtureLoader", "path": str(self.ws.fixture)}
        self.out = root / "student"
        self.silver = root / "silver.jsonl"
        body = {
            "variant": "oc_sft",
            "views": 2,
            "lambda_": 1.0,
            "output_dir": str(self.out),
            "student": block,
            "silver": {
                "path": str(self.silver),
                "num_orders": 2,
                "teacher": block,
                "data": [{**data, "top_k": 4, "max_queries": 3}],
            },
            "train": {"learning_rate": 0.01, "save_steps": 2, "num_threads": 1, **train},
            "lora": {"r": 4, "alpha": 8},
        }
        self.cfg = root / "tr.yaml"
        self.cfg.write_text(yaml.safe_dump(body), encoding="utf-8")

    def cli(self, command: str, *args: str) -> tuple[int, str]:
        return self.ws.cli(command, str(self.cfg), *args)

    def made(self) -> _Trainer:
        rc, log = self.cli("silver")
        expect(rc == 0 and self.silver.is_file(), f"silver exit {rc}: {log[-300:]}")
        return self

    def edit_fixture(self) -> None:
        """Edit the second query's first passage in the data file, under the same path."""
        lines = self.ws.fixture.read_text(encoding="utf-8").splitlines()
        row = json.loads(lines[1])
        row["candidates"][0]["text"] = "an edited passage about something else"
        lines[1] = json.dumps(row)
        self.ws.fixture.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _message(log: str) -> str:
    """The refusal's text, from the last error line of a captured log."""
    return log.strip().splitlines()[-1].split(": ", 1)[-1]


def _nan_label(root: Path) -> str:
    t = _Trainer(root, max_steps=4).made()
    lines = t.silver.read_text(encoding="utf-8").splitlines()
    row = json.loads(lines[2])
    row["order_scores"][0][1] = float("nan")
    lines[2] = json.dumps(row)  # json writes NaN
    t.silver.write_text("\n".join(lines) + "\n", encoding="utf-8")
    rc, log = t.cli("train")
    expect(rc == 2 and "silver.jsonl:3" in log and "order_scores[0][1] is nan" in log, log[-300:])
    expect(not (t.out / "adapter").exists(), "an adapter was saved")
    return "exit 2 before training: silver.jsonl:3 order_scores[0][1] is nan, remake with --force"


def _corrupt_checkpoint(root: Path) -> str:
    t = _Trainer(root, max_steps=4, keep_snapshots=True).made()
    rc, log = t.cli("train", "--pause-at", "2")
    ckpt = t.out / "checkpoints" / "checkpoint-2"
    expect(rc == 0 and ckpt.is_dir(), f"pause exit {rc}: {log[-300:]}")
    weights = ckpt / "adapter_model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-4:] = b"\x00\x00\xc0\x7f"  # a float32 NaN, same size
    weights.write_bytes(bytes(data))
    rc, log = t.cli("train")
    msg = _message(log)
    expect(rc == 2 and "changed since it was saved" in msg and "delete" in msg, log[-300:])
    expect(not (t.out / "adapter").exists(), "an adapter was saved")
    return "exit 2: the checkpoint's adapter changed since it was saved; delete it or --restart"


def _other_seed_override(root: Path) -> str:
    t = _Trainer(root, max_steps=2).made()
    rc, log = t.cli("train", "-o", "silver.seed=5")
    msg = _message(log)
    expect(rc == 2 and "silver.seed: 0 in the file, 5 in the config" in msg, log[-300:])
    expect(not (t.out / "adapter").exists(), "a student was saved")
    return "exit 2: silver.seed: 0 in the file, 5 in the config, with the fix"


def _silver_data_changed(root: Path) -> str:
    t = _Trainer(root).made()
    before = t.silver.read_bytes()
    t.edit_fixture()
    rc, log = t.cli("silver")
    msg = _message(log)
    expect(rc == 2 and "smoke-2" in msg and "--force" in msg, f"exit {rc}: {log[-300:]}")
    expect(t.silver.read_bytes() == before, "the silver file changed")
    rc2, _ = t.cli("silver", "--force")
    expect(rc2 == 0 and t.silver.read_bytes() != before, f"--force exit {rc2}")
    return "exit 2 naming query smoke-2 and the passage that changed; --force remakes (exit 0)"


def _finished_then_labels_changed(root: Path) -> str:
    t = _Trainer(root, max_steps=2).made()
    rc, log = t.cli("train")
    expect(rc == 0 and (t.out / "adapter").is_dir(), f"train exit {rc}: {log[-300:]}")
    t.edit_fixture()
    rc, _ = t.cli("silver", "--force")
    expect(rc == 0, f"silver --force exit {rc}")
    rc, log = t.cli("train")
    msg = _message(log)
    expect(rc == 2 and "trained on other training data" in msg, f"exit {rc}: {log[-300:]}")
    rc, log = t.cli("train", "--restart")
    expect(rc == 0, f"--restart exit {rc}: {log[-300:]}")
    return "exit 2: the student was trained on other training data; --restart retrains (exit 0)"


def _base_replaced(root: Path) -> str:
    t = _Trainer(root, max_steps=4, keep_snapshots=True).made()
    rc, log = t.cli("train", "--pause-at", "2")
    expect(rc == 0, f"pause exit {rc}: {log[-300:]}")
    make_tiny_model(t.model, seed=1)  # the same config and shapes, other weights
    rc, log = t.cli("train")
    msg = _message(log)
    expect(rc == 2 and "another base model (files-sha256:" in msg, f"exit {rc}: {log[-300:]}")
    return "exit 2: the checkpoints were trained on another base model (both fingerprints named)"


def _run_folder_as_output(root: Path) -> str:
    t = _Trainer(root, max_steps=2).made()
    run = root / "run"
    rc, _ = t.ws.cli("run", str(t.ws.config()), "--run-dir", str(run), "--eval")
    expect(rc == 0, f"presdep run exit {rc}")
    before = {p: p.read_bytes() for p in run.rglob("*") if p.is_file()}
    for extra in ((), ("--restart",)):
        rc, log = t.cli("train", "-o", f"output_dir={run}", *extra)
        msg = _message(log)
        expect(rc == 2 and "choose another output_dir" in msg, f"exit {rc}: {log[-300:]}")
        expect("--restart" not in msg, f"the refusal advises --restart: {msg}")
    after = {p: p.read_bytes() for p in run.rglob("*") if p.is_file()}
    expect(after == before, "the run folder changed")
    return "exit 2, with and without --restart: choose another output_dir; run folder unchanged"


def _two_trainers(root: Path) -> str:
    t = _Trainer(root, max_steps=2000).made()
    first = t.ws.spawn(["train", str(t.cfg)])
    lock = t.out / ".locks" / "train.lock"
    try:
        end = time.monotonic() + 120
        while time.monotonic() < end and not (lock.is_file() and lock.read_text().strip()):
            time.sleep(0.05)
        expect(lock.is_file(), "the first trainer never claimed the folder")
        rc, log = t.cli("train")
        msg = _message(log)
        named = f"is being trained by process {first.pid} on " in msg
        expect(rc == 2 and named and "--wait" in msg, f"exit {rc}: {log[-300:]}")
        expect(first.poll() is None, "the first trainer stopped")
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    return "exit 2 at once, naming the folder and the holder (process, host, since); --wait offered"


TRAINING_CASES = [
    Case(
        "bad input",
        "a NaN label in the silver file, then presdep train",
        "exit 2 naming file, line and entry; no adapter",
        _nan_label,
    ),
    Case(
        "bad input",
        "presdep train -o silver.seed=5 on seed-0 silver labels",
        "exit 2 naming the setting that differs",
        _other_seed_override,
    ),
    Case(
        "bad input",
        "training output_dir is a finished presdep run folder (with and without --restart)",
        "exit 2 advising another output_dir, never --restart; the run folder unchanged",
        _run_folder_as_output,
    ),
    Case(
        "stale results",
        "presdep silver after a passage of the data changed under the same path",
        "exit 2 naming the query; --force remakes",
        _silver_data_changed,
    ),
    Case(
        "stale results",
        "a finished student, then its silver labels remade from changed data",
        "exit 2 (other training data); --restart retrains",
        _finished_then_labels_changed,
    ),
    Case(
        "stale results",
        "resume after the base weights were replaced at the same path (another seed)",
        "exit 2 naming both fingerprints",
        _base_replaced,
    ),
    Case(
        "kill point",
        "the latest checkpoint's adapter bytes corrupted at the same size, then resume",
        "exit 2 naming the file; no adapter saved",
        _corrupt_checkpoint,
    ),
    Case(
        "concurrency",
        "2 presdep train processes on one output_dir",
        "the second refuses at once, naming the folder and the holder",
        _two_trainers,
    ),
]
