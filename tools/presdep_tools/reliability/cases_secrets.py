"""Reliability cases: secrets never on disk, results never rewritten (in-process CLI calls)."""

from __future__ import annotations

import os
from pathlib import Path
from unittest.mock import patch

import presentation_dependence.runners as runners
from presdep_tools.reliability import Case
from presdep_tools.reliability.cases_inputs import TOKEN, judge_config, metrics, run_eval
from presdep_tools.reliability.workspace import Workspace, expect
from presentation_dependence.io.fixture import read_fixture, write_fixture
from presentation_dependence.records import Query, RerankRequest

__all__ = ["SECRET_CASES"]


def _override_secret(root: Path) -> str:
    ws = Workspace(root)
    with patch.dict(os.environ, {"HF_TOKEN": TOKEN}):
        rc, _ = run_eval(ws, ws.config(), "run", "-o", f"description=pasted {TOKEN}")
        jcfg = judge_config(root)
        o = ["-o", f"description=pasted {TOKEN}"]
        rc_j, _ = ws.cli("judge", str(jcfg), "--out", str(root / "judge"), *o)
        rc_g, _ = ws.cli("gate", str(jcfg), "--verdict", str(root / "gate" / "v.json"), *o)
    leaks = ws.files_holding(root / "run", TOKEN) + ws.files_holding(root / "judge", TOKEN)
    leaks += ws.files_holding(root / "gate", TOKEN)
    expect(rc == rc_j == 0 and rc_g in (0, 1), f"exit codes {rc}, {rc_j}, {rc_g}")
    expect(not leaks, f"the token is on disk in {leaks}")
    return "run, judge and gate folders hold <redacted:HF_TOKEN>, never the value"


def _identifier_not_rewritten(root: Path) -> str:
    ws = Workspace(root)
    with patch.dict(os.environ, {"MY_KEYRING_PROVIDER": "smoke-1"}):
        rc, _ = run_eval(ws, ws.config(), "run")
    m = metrics(ws, "run")
    expect(rc == 0 and m["num_queries"] == 6 and "smoke-1" in m["per_query"], str(m["num_queries"]))
    return "exit 0; qid smoke-1 kept in run.trec; all 6 queries evaluated"


def _secret_in_data(root: Path) -> str:
    ws = Workspace(root)
    requests, qrels = read_fixture(ws.fixture)
    requests[0] = RerankRequest(
        Query(requests[0].query.qid, f"what is {TOKEN}"), requests[0].candidates
    )
    write_fixture(ws.fixture, requests, qrels)
    with patch.dict(os.environ, {"OPENAI_API_KEY": TOKEN}):
        rc, log = run_eval(ws, ws.config(), "run")
    expect(rc == 2 and "OPENAI_API_KEY" in log and TOKEN not in log, f"exit {rc}")
    expect(not ws.files_holding(root / "run", TOKEN), "the secret reached the run folder")
    return "exit 2 naming $OPENAI_API_KEY (not its value); nothing holding it written"


def _debug_traceback(root: Path) -> str:
    import contextlib
    import io

    ws = Workspace(root)
    (root / "r").mkdir()

    def boom(self: object) -> None:
        raise RuntimeError(f"failed near {TOKEN}")

    err = io.StringIO()
    with (
        patch.dict(os.environ, {"HF_TOKEN": TOKEN}),
        patch.object(runners.EvalManager, "evaluate", boom),
        contextlib.redirect_stderr(err),
    ):
        rc, _ = ws.cli("--debug", "eval", "--run-dir", str(root / "r"))
    text = err.getvalue()
    expect(rc == 3 and "Traceback" in text and TOKEN not in text, f"exit {rc}")
    return "exit 3; the --debug traceback shows <redacted:HF_TOKEN>"


SECRET_CASES = [
    Case(
        "secrets",
        "HF_TOKEN pasted via --override (run, judge, gate)",
        "no file holds the value",
        _override_secret,
    ),
    Case(
        "secrets",
        "qid equals an env value (MY_KEYRING_PROVIDER=smoke-1)",
        "results never rewritten",
        _identifier_not_rewritten,
    ),
    Case(
        "secrets",
        "an API key inside the data (query text)",
        "refused, nothing written",
        _secret_in_data,
    ),
    Case("secrets", "traceback with --debug", "redacted", _debug_traceback),
]
