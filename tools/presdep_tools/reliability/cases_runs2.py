"""Reliability cases of issue 38 on the run, eval and psi paths: inputs eval and psi cannot use,
stale scores, reordered data, a config alias bomb, and the machine's own faults."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from unittest.mock import patch

import presentation_dependence.io.atomic as atomic
from presdep_tools.reliability import Case
from presdep_tools.reliability.cases_inputs import metrics, run_eval
from presdep_tools.reliability.workspace import Workspace, expect
from presentation_dependence.io.fixture import read_fixture, write_fixture
from presentation_dependence.records import Qrels, RerankRequest

__all__ = ["RUN_CASES_2"]


def _psi(ws: Workspace, cfg: Path, run_dir: str, *extra: str) -> tuple[int, str]:
    return ws.cli("psi", str(cfg), "--run-dir", str(ws.root / run_dir), *extra)


def _psi_metrics(ws: Workspace, run_dir: str) -> dict[str, Any]:
    return dict(json.loads((ws.root / run_dir / "psi" / "psi_metrics.json").read_text()))


def _regrade(ws: Workspace) -> None:
    """Every judgement of the fixture changed (grade g -> 3 - g), the queries kept."""
    requests, qrels = read_fixture(ws.fixture)
    judged = {q: {d: 3 - g for d, g in j.items()} for q, j in qrels.judgements.items()}
    write_fixture(ws.fixture, requests, Qrels(judged))


def _foreign_qrels(root: Path) -> str:
    ws = Workspace(root)
    run_eval(ws, ws.config(), "run")
    before = (root / "run" / "metrics.json").read_bytes()
    other = root / "other-qrels.txt"
    other.write_text("elsewhere-1 0 d1 1\n", encoding="utf-8")
    rc, log = ws.cli("eval", "--run-dir", str(root / "run"), "--qrels", str(other))
    kept = (root / "run" / "metrics.json").read_bytes() == before
    expect(rc == 2 and kept and "run.trec" in log and str(other) in log, f"exit {rc}: {log[-300:]}")
    return "exit 2 naming run.trec and the qrels file; metrics.json untouched (no NaN written)"


def _cutoff_zero(root: Path) -> str:
    ws = Workspace(root)
    run_eval(ws, ws.config(), "run")
    cmd = [sys.executable, "-m", "presentation_dependence.cli", "eval"]
    cmd += [str(root / "run" / "run.trec"), str(root / "run" / "qrels.txt"), "-m", "ndcg@0"]
    done = subprocess.run(cmd, env=ws.env(), capture_output=True, text=True, timeout=300)
    expect(done.returncode == 2 and ">= 1" in done.stderr, f"exit {done.returncode}")
    cfg = ws.config("p0", eval={"measures": ["ndcg@10", "P@0"]})
    rc, log = run_eval(ws, cfg, "p0")
    expect(rc == 2 and "'P@0' has the cutoff 0" in log, f"exit {rc}: {log[-300:]}")
    expect(not (root / "p0").exists(), "the run started before the config was refused")
    return "eval -m ndcg@0: exit 2 (no abort in pytrec_eval); eval.measures [P@0]: exit 2 at load"


def _one_candidate(root: Path) -> str:
    ws = Workspace(root)
    requests, qrels = read_fixture(ws.fixture)
    requests[1] = RerankRequest(requests[1].query, requests[1].candidates[:1])
    write_fixture(ws.fixture, requests, qrels)
    rc, log = _psi(ws, ws.config(), "run")
    expect(rc == 0, f"exit {rc}: {log[-300:]}")
    m = _psi_metrics(ws, "run")
    expect(list(m.get("excluded_queries", {})) == ["smoke-2"], str(m.get("excluded_queries")))
    expect(m["num_queries"] == 5 and "1 of 6 queries have one candidate" in log, log[-300:])
    return "exit 0; smoke-2 under excluded_queries, the order metrics over the other 5 queries"


def _bomb(levels: int) -> str:
    items = [f"&a0 [{', '.join(['x'] * 9)}]"]
    items += [f"&a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, levels)]
    return f"[{', '.join(items)}]"


def _alias_bomb(root: Path) -> str:
    ws = Workspace(root)
    cfg = ws.config()
    cfg.write_text(cfg.read_text() + f"seed: {_bomb(9)}\n", encoding="utf-8")
    t0 = time.perf_counter()
    rc, log = run_eval(ws, cfg, "run")
    took = time.perf_counter() - t0
    expect(rc == 2 and "expands to more than" in log and took < 30, f"exit {rc} in {took:.0f} s")
    expect(len(log) < 2000, f"{len(log)} characters of log")
    return "exit 2 in under 30 s: 'expands to more than 1,000,000 values', one short line"


def _from_scores_after_regrade(root: Path) -> str:
    ws = Workspace(root)
    cfg = ws.config()
    _psi(ws, cfg, "run")
    before = (root / "run" / "psi" / "psi_metrics.json").read_bytes()
    _regrade(ws)
    rc1, log1 = _psi(ws, cfg, "run", "--from-scores")
    unchanged = (root / "run" / "psi" / "psi_metrics.json").read_bytes() == before
    expect(rc1 == 2 and "for 6 queries" in log1 and unchanged, f"exit {rc1}: {log1[-300:]}")
    rc2, _ = _psi(ws, cfg, "run", "--recompute-changed")
    rc3, _ = _psi(ws, cfg, "fresh")
    expect(rc2 == rc3 == 0, f"exit codes {rc2}, {rc3}")
    expect(_psi_metrics(ws, "run") == _psi_metrics(ws, "fresh"), "recomputed metrics differ")
    return "exit 2 naming the 6 regraded queries; --recompute-changed equals a fresh folder"


def _from_scores_elsewhere(root: Path) -> str:
    ws = Workspace(root)
    _psi(ws, ws.config(), "run")
    before = (root / "run" / "psi" / "psi_metrics.json").read_bytes()
    ws.fixture.rename(ws.fixture.with_suffix(".elsewhere"))  # the data is not on this machine
    rc, log = ws.cli("psi", "--run-dir", str(root / "run"), "--from-scores")
    same = (root / "run" / "psi" / "psi_metrics.json").read_bytes() == before
    expect(rc == 0 and same and "unchecked" in log, f"exit {rc}: {log[-300:]}")
    return "exit 0 from the folder's own config and stored grades; logged 'unchecked'; same bytes"


def _reordered_queries(root: Path) -> str:
    ws = Workspace(root)
    ranked = root / "ranked.log"
    cfg = ws.config(reranker={"log_path": str(ranked)})
    run_eval(ws, cfg, "run")
    _psi(ws, cfg, "run")
    before = metrics(ws, "run")["per_query"]
    requests, qrels = read_fixture(ws.fixture)
    backwards = {q: dict(qrels.judgements[q]) for q in reversed(list(qrels.judgements))}
    write_fixture(ws.fixture, list(reversed(requests)), Qrels(backwards))
    ranked.write_text("")
    rc1, _ = run_eval(ws, cfg, "run")
    rc2, _ = _psi(ws, cfg, "run")
    redone = ranked.read_text().splitlines()
    expect(rc1 == rc2 == 0 and not redone, f"exit {rc1}/{rc2}, ranked {len(redone)}")
    expect(metrics(ws, "run")["per_query"] == before, "per-query figures changed")
    # Means and bootstrap intervals follow the data's query order: those of a fresh folder.
    run_eval(ws, cfg, "fresh")
    _psi(ws, cfg, "fresh")
    same = (metrics(ws, "run"), _psi_metrics(ws, "run")) == (
        metrics(ws, "fresh"),
        _psi_metrics(ws, "fresh"),
    )
    expect(same, "the resumed figures differ from a fresh folder's")
    return "run and psi resume, nothing ranked again; the figures equal a fresh folder's"


def _run_dir_is_a_file(root: Path) -> str:
    ws = Workspace(root)
    afile = root / "afile"
    afile.write_text("not a folder")
    rc, log = run_eval(ws, ws.config(), "afile")
    expect(rc == 2 and str(afile) in log and "internal error" not in log, f"exit {rc}: {log}")
    return "exit 2 naming the path: 'a file is in the way of a folder', with the fix"


def _machine_refuses(code: int, words: str) -> Any:
    def case(root: Path) -> str:
        ws = Workspace(root)
        cfg = ws.config()

        def refuse(fd: int) -> None:
            raise OSError(code, os.strerror(code))

        with patch.object(atomic.os, "fsync", refuse):
            rc, log = run_eval(ws, cfg, "run")
        ok = rc == 2 and words in log and str(root / "run") in log
        expect(ok and "internal error" not in log, f"exit {rc}: {log[-300:]}")
        rc2, _ = run_eval(ws, cfg, "run")  # the fault is gone: the same command completes
        rc3, _ = run_eval(ws, cfg, "fresh")
        expect(rc2 == rc3 == 0 and metrics(ws, "run") == metrics(ws, "fresh"), "rerun differs")
        return f"exit 2 '{words}' naming the file; after the fault the rerun equals a fresh run"

    return case


RUN_CASES_2 = [
    Case(
        "bad input",
        "eval --qrels sharing no query with the run",
        "exit 2 naming both files; metrics.json untouched",
        _foreign_qrels,
    ),
    Case(
        "bad input",
        "measure cutoff 0 (ndcg@0 on the command line, P@0 in eval.measures)",
        "exit 2 where the measure is parsed, before any compute",
        _cutoff_zero,
    ),
    Case(
        "bad input",
        "psi with a query of one candidate",
        "exit 0; the query left out of the order metrics and listed",
        _one_candidate,
    ),
    Case(
        "bad input",
        "600-byte YAML alias bomb in a typed config field",
        "exit 2 at once, a bounded message",
        _alias_bomb,
    ),
    Case(
        "bad input",
        "--run-dir names a file",
        "exit 2 naming the path (not an internal error)",
        _run_dir_is_a_file,
    ),
    Case(
        "bad input",
        "disk full while writing results",
        "exit 2 naming the file; the rerun completes",
        _machine_refuses(errno.ENOSPC, "the disk is full"),
    ),
    Case(
        "bad input",
        "read-only file system",
        "exit 2 naming the file; the rerun completes",
        _machine_refuses(errno.EROFS, "read-only"),
    ),
    Case(
        "bad input",
        "file larger than ulimit -f",
        "exit 2 naming the file; the rerun completes",
        _machine_refuses(errno.EFBIG, "ulimit -f"),
    ),
    Case(
        "stale results",
        "psi --from-scores after the judgements changed",
        "refused naming the queries; --recompute-changed equals a fresh run",
        _from_scores_after_regrade,
    ),
    Case(
        "stale results",
        "psi --from-scores of an archive whose data is elsewhere",
        "recomputed from the stored grades, logged as unchecked",
        _from_scores_elsewhere,
    ),
    Case(
        "stale results",
        "queries reordered in the data file",
        "run and psi resume without recomputing; the same figures",
        _reordered_queries,
    ),
]
