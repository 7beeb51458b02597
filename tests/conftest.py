"""Shared test fixtures."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The folder of real evaluation data (``<clone parent>/shared/data``).

    The repository is cloned at ``X/main`` with the data at ``X/shared/data``; elsewhere set
    ``PRESDEP_SHARED_DATA`` to the data folder. Tests that need it are skipped without it.
    """
    candidate = Path(__file__).resolve().parents[2] / "shared" / "data"
    if candidate.is_dir():
        return candidate
    env = os.environ.get("PRESDEP_SHARED_DATA")
    if env and Path(env).is_dir():
        return Path(env)
    pytest.skip(
        f"../shared/data not found: looked at {candidate} and PRESDEP_SHARED_DATA="
        f"{env or '(unset)'}; set PRESDEP_SHARED_DATA to the shared data folder to run this test"
    )
