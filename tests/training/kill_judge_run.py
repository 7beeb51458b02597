"""Train a judge in a subprocess and SIGKILL it mid-run (tests/training/test_judge_training.py).

``python tests/training/kill_judge_run.py CONFIG_JSON KILL_STEP N``: trains the raw judge
training config (JSON) on the first N synthetic items of :func:`tests.training.test_judge_training.
synthetic_items` and sends itself SIGKILL right after optimizer step ``KILL_STEP`` is logged.
"""

from __future__ import annotations

import json
import logging
import sys

import torch

from presentation_dependence.training.judge_config import judge_training_config_from_raw
from presentation_dependence.training.judge_trainer import train_judge
from tests.training.kill_run import KillAfterStep
from tests.training.test_judge_training import synthetic_items


def main() -> int:
    raw, kill_step, n = json.loads(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    torch.set_num_threads(1)
    cfg = judge_training_config_from_raw(raw, "jr")
    train_judge(cfg, items=synthetic_items(n), callbacks=[KillAfterStep(kill_step)])
    return 3  # the kill did not happen


if __name__ == "__main__":
    sys.exit(main())
