"""Train in a subprocess and SIGKILL the process mid-run (used by tests/training/test_resume.py).

``python tests/training/kill_run.py CONFIG_JSON KILL_STEP VIEWS_JSONL``: trains the config
(a raw training config as JSON) and sends itself SIGKILL right after the progress line of
optimizer step ``KILL_STEP`` is written. Every training example the dataset hands out is
appended to ``VIEWS_JSONL`` (key, epoch, views) so the test can compare data order and views.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
from pathlib import Path
from typing import Any

import torch
from transformers import TrainerCallback

from presentation_dependence.training.collate import SilverDataset, TrainExample
from presentation_dependence.training.config import training_config_from_raw
from presentation_dependence.training.trainer import train_student


class KillAfterStep(TrainerCallback):
    """SIGKILL this process once step ``step``'s loss has been logged."""

    def __init__(self, step: int) -> None:
        self.step = step

    def on_log(
        self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kw: Any
    ) -> None:
        if state.global_step == self.step and logs and "loss" in logs:
            os.kill(os.getpid(), signal.SIGKILL)


def record_examples(path: Path) -> None:
    """Make ``SilverDataset.__getitem__`` append what it returns to ``path``."""
    original = SilverDataset.__getitem__

    def getitem(self: SilverDataset, index: int) -> TrainExample:
        ex = original(self, index)
        line = {"key": ex.key, "epoch": self.epoch, "views": ex.views.tolist()}
        with path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(line) + "\n")
        return ex

    SilverDataset.__getitem__ = getitem  # type: ignore[method-assign]


def main() -> int:
    raw, kill_step, views = json.loads(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    torch.set_num_threads(1)
    record_examples(views)
    train_student(
        training_config_from_raw(raw, "resume-test"), callbacks=[KillAfterStep(kill_step)]
    )
    return 3  # the kill did not happen


if __name__ == "__main__":
    sys.exit(main())
