"""Every reliability case, in the order of docs/RELIABILITY.md."""

from __future__ import annotations

from presdep_tools.reliability import Case
from presdep_tools.reliability.cases_inputs import INPUT_CASES, STALE_CASES
from presdep_tools.reliability.cases_judge import JUDGE_CASES
from presdep_tools.reliability.cases_runs import (
    CONCURRENCY_CASES,
    HOSTED_CASES,
    KILL_CASES,
)
from presdep_tools.reliability.cases_runs2 import RUN_CASES_2
from presdep_tools.reliability.cases_secrets import SECRET_CASES
from presdep_tools.reliability.cases_training import TRAINING_CASES

__all__ = ["CASES"]

CASES: list[Case] = [
    *INPUT_CASES,
    *STALE_CASES,
    *KILL_CASES,
    *CONCURRENCY_CASES,
    *SECRET_CASES,
    *HOSTED_CASES,
    *RUN_CASES_2,
    *JUDGE_CASES,
    *TRAINING_CASES,
]
