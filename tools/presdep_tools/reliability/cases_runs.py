"""Reliability cases: kill points, concurrent processes, hosted-teacher faults."""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import re
import signal
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any
from unittest.mock import patch

from presdep_tools.reliability import Case
from presdep_tools.reliability.cases_inputs import judge_config
from presdep_tools.reliability.workspace import Workspace, expect
from presdep_tools.testing.chat_server import ChatServer
from presentation_dependence.judge.config import load_judge_config
from presentation_dependence.judge.judges.scripted import ScriptedJudge
from presentation_dependence.judge.runner import run_judge_task
from presentation_dependence.records import Candidate, Query
from presentation_dependence.rerankers.api_teacher import (
    ApiRequestError,
    ClosedModelGenBscOptions,
    ClosedModelGenBscReranker,
)
from presentation_dependence.runners.run_folder import RunFolder

__all__ = ["CONCURRENCY_CASES", "HOSTED_CASES", "KILL_CASES"]


def _results(run_dir: Path) -> dict[str, bytes]:
    """The result files of a run folder (not provenance, logs, unit costs or locks)."""
    skip = {"provenance.json", "run.log", "unit_costs.jsonl"}
    return {
        str(p.relative_to(run_dir)): p.read_bytes()
        for p in sorted(run_dir.rglob("*"))
        if p.is_file() and p.name not in skip and ".locks" not in p.parts
    }


def _wait_for(pred: Callable[[], bool], timeout_s: float = 300) -> bool:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.02)
    return False


def _kill_after(k: int) -> Callable[[Path], str]:
    def case(root: Path) -> str:
        ws = Workspace(root)
        log = root / "ranked.log"
        cfg = ws.config(reranker={"delay_s": 0.3, "log_path": str(log)})
        rc, _ = ws.cli("run", str(cfg), "--run-dir", str(root / "ref"), "--eval")
        expect(rc == 0, f"reference run exit {rc}")
        log.write_text("")
        per_query = root / "killed" / "per_query_results"
        proc = ws.spawn(["run", str(cfg), "--run-dir", str(root / "killed")])
        _wait_for(lambda: len(list(per_query.glob("*.json"))) >= k)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        before = {p.stem for p in per_query.glob("*.json")}
        log.write_text("")
        rc, _ = ws.cli("run", str(cfg), "--run-dir", str(root / "killed"), "--eval")
        redone = {line.split()[1] for line in log.read_text().splitlines()}
        expect(rc == 0 and redone.isdisjoint(before), f"exit {rc}; recomputed {redone & before}")
        expect(
            _results(root / "killed") == _results(root / "ref"), "outputs differ from the reference"
        )
        return f"killed with {len(before)} of 6 done; the rerun ranked only {len(redone)}; byte-identical"

    return case


def _judge_killed(root: Path) -> str:
    ws = Workspace(root)
    rows = [
        {
            "id": f"i{i:02d}",
            "prompt": f"p{i}",
            "responses": ["a", "b", "c"],
            "labels": [i % 3 == j for j in range(3)],
        }
        for i in range(10)
    ]
    cfg = judge_config(root, rows, placement={"mode": "cyclic"})
    rc, _ = ws.cli("judge", str(cfg), "--out", str(root / "ref"))
    real, calls = ScriptedJudge.judge, []

    def dies(self: ScriptedJudge, requests: Sequence[Any], **kw: Any) -> Any:
        calls.append(len(requests))
        if len(calls) == 4:
            raise KeyboardInterrupt  # the process dies while judging the 4th item
        return real(self, requests, **kw)

    with patch.object(ScriptedJudge, "judge", dies), contextlib.suppress(KeyboardInterrupt):
        run_judge_task(load_judge_config(cfg), root / "killed")
    kept = len(list((root / "killed" / "records_parts").glob("part*.json")))
    rc2, _ = ws.cli("judge", str(cfg), "--out", str(root / "killed"))
    same = all(
        (root / "killed" / n).read_bytes() == (root / "ref" / n).read_bytes()
        for n in ("records.jsonl", "summary.json")
    )
    expect(
        rc == rc2 == 0 and kept == 3 and same, f"exit {rc}/{rc2}, parts kept {kept}, same {same}"
    )
    return "3 items kept on disk at the kill; the rerun judged the other 7; records byte-identical"


def _append(folder: str, who: int, n: int) -> None:
    for i in range(n):
        RunFolder(folder).append_provenance({"who": who, "i": i})


def _provenance_writers(root: Path) -> str:
    lost = []
    for trial in range(4):
        folder = root / f"t{trial}"
        ctx = multiprocessing.get_context("fork")
        procs = [ctx.Process(target=_append, args=(str(folder), w, 10)) for w in range(4)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(120)
        got = json.loads((folder / "provenance.json").read_text())["invocations"]
        lost.append(40 - len(got))
    expect(lost == [0] * 4, f"records lost per trial: {lost}")
    return "4 trials x 4 processes x 10 appends: 0 records lost"


def _two_processes(shards: Sequence[str | None]) -> Callable[[Path], str]:
    def case(root: Path) -> str:
        ws = Workspace(root)
        log = root / "ranked.log"
        cfg = ws.config(reranker={"delay_s": 0.3, "log_path": str(log)})
        procs = [
            ws.spawn(
                ["run", str(cfg), "--run-dir", str(root / "shared"), *(["--shard", s] if s else [])]
            )
            for s in shards
        ]
        codes = [p.wait(600) for p in procs]
        ranked = Counter(line.split()[1] for line in log.read_text().splitlines())
        rc, _ = ws.cli("run", str(cfg), "--run-dir", str(root / "shared"))  # completes if needed
        log.write_text("")
        ws.cli("run", str(cfg), "--run-dir", str(root / "single"))
        expect(codes == [0] * len(shards) and rc == 0, f"exit codes {codes}, {rc}")
        expect(set(ranked.values()) == {1} and len(ranked) == 6, f"ranked {dict(ranked)}")
        same = {k: v for k, v in _results(root / "shared").items()} == _results(root / "single")
        expect(same, "outputs differ from a single process")
        return f"{len(shards)} processes: each of the 6 queries ranked once; outputs as one process"

    return case


def _grades(messages: Sequence[Mapping[str, Any]], body: Mapping[str, Any]) -> str:
    user = str(messages[-1]["content"])
    block = user.split("Passages:\n", 1)[1].split("\n\nGrade each", 1)[0]
    slots = re.findall(r"^\[(\d+)\] (.*)$", block, flags=re.M)
    return "\n".join(f"[{i}] grade:{len(t) % 4}" for i, t in slots)


def _teacher(root: Path, url: str, **kw: Any) -> Any:
    opts = {
        "model": "loopback",
        "base_url": url,
        "num_orders": 2,
        "timeout_s": 0.5,
        "backoff_base_s": 0.01,
        "backoff_max_s": 0.05,
        "cache_dir": str(root / "cache"),
        **kw,
    }
    return ClosedModelGenBscReranker(ClosedModelGenBscOptions(**opts))


def _hosted(faults: Sequence[str], **server: Any) -> Callable[[Path], str]:
    def case(root: Path) -> str:
        cands = [Candidate(f"d{i}", f"passage {i} " + "x" * i, i + 1) for i in range(4)]
        with ChatServer(_grades, faults=faults, **server) as srv:
            t = _teacher(root, srv.url, max_retries=0 if "trickle" in faults else 6)
            try:
                res = t.rank(Query("q", "what"), cands)
                outcome = f"answered: {res.details['http_calls']} HTTP calls, {res.details['retries']} retries"
            except ApiRequestError as e:
                outcome = f"ApiRequestError: {str(e).replace(srv.url, '<loopback>')[:140]}"
            srv.wait_idle()
            counts = dict(srv.counts)
        return f"{outcome}; server saw {counts}"

    return case


def _transient_faults(root: Path) -> str:
    out = _hosted(["429", "500", "timeout", "malformed"], timeout_sleep_s=1.0)(root)
    expect(out.startswith("answered: 6 HTTP calls, 4 retries"), out)
    return out


def _refusal(root: Path) -> str:
    out = _hosted(["400"])(root)  # 2 presentations: one refused, never retried
    expect("max_tokens is too large" in out and "'requests': 2" in out, out)
    return out


def _trickle(root: Path) -> str:
    out = _hosted(["trickle"], trickle_interval_s=0.2)(root)
    expect("deadline" in out and "'client_gone': 1" in out, out)
    return out


def _never_parses(root: Path) -> str:
    cands = [Candidate(f"d{i}", f"passage {i}", i + 1) for i in range(3)]
    with ChatServer(lambda m, b: "Sorry, I cannot grade passages.") as srv:
        try:
            _teacher(root, srv.url).rank(Query("q", "what"), cands)
            failed = False
        except ApiRequestError:
            failed = True
    cached = list((root / "cache").rglob("*.json"))
    with ChatServer(_grades) as srv:
        res = _teacher(root, srv.url).rank(Query("q", "what"), cands)
        asked = srv.counts["ok"]
    expect(
        failed and not cached and asked == 2 and res.details["missing_grades"] == 0,
        f"failed {failed}, cached {len(cached)}, asked again {asked}",
    )
    return "the query failed (not a run of zeros), nothing cached; a rerun asked again: 2 requests"


def _restart_resumes(root: Path) -> str:
    cands = [Candidate(f"d{i}", f"passage {i}", i + 1) for i in range(4)]
    with ChatServer(_grades) as srv:
        first = _teacher(root, srv.url).rank(Query("q", "what"), cands)
    with ChatServer(_grades) as srv:
        again = _teacher(root, srv.url).rank(Query("q", "what"), cands)
        n = srv.counts["requests"]
    expect(n == 0 and [i.score for i in first.items] == [i.score for i in again.items], f"{n}")
    return "a restarted server got 0 requests: every answer came from the cache"


def _hosted_two_processes(root: Path) -> str:
    """The issue's case: two processes on one folder with a hosted teacher."""
    ws = Workspace(root)
    with ChatServer(_grades) as srv:
        reranker = {
            "reranker_class": "ClosedModelGenBscReranker",
            "model": "loopback",
            "base_url": srv.url,
            "num_orders": 2,
            "cache_dir": str(root / "cache"),
        }
        cfg = ws.config(reranker=reranker, data={"top_k": 5})
        procs = [ws.spawn(["run", str(cfg), "--run-dir", str(root / "shared")]) for _ in range(2)]
        codes = [p.wait(600) for p in procs]
        rc, _ = ws.cli("run", str(cfg), "--run-dir", str(root / "shared"))
        served = dict(srv.served_prompts)
        requests = srv.counts["requests"]
    expect(codes == [0, 0] and rc == 0, f"exit codes {codes}, {rc}")
    expect(requests == 12 and set(served.values()) == {1}, f"{requests} requests, {served}")
    return "12 prompts (6 queries x 2 orders), 12 requests: none sent twice"


KILL_CASES = [
    Case(
        "kill point",
        f"SIGKILL of 'presdep run' after {k} of 6 queries",
        "rerun ranks only the rest; outputs byte-identical",
        _kill_after(k),
    )
    for k in (1, 3, 5)
] + [
    Case(
        "kill point",
        "judge sweep interrupted at the 4th of 10 items (in-process)",
        "finished items kept; rerun byte-identical",
        _judge_killed,
    )
]
CONCURRENCY_CASES = [
    Case(
        "concurrency",
        "4 processes append provenance.json at once",
        "no record lost",
        _provenance_writers,
    ),
    Case(
        "concurrency",
        "2 processes, no shard, one folder",
        "each query ranked once",
        _two_processes([None, None]),
    ),
    Case(
        "concurrency",
        "2 processes on the same shard 0/2, then shard 1/2",
        "each query ranked once",
        _two_processes(["0/2", "0/2", "1/2"]),
    ),
]
HOSTED_CASES = [
    Case(
        "hosted fault",
        "429, 500, timeout, malformed body (once each)",
        "retried, answered, none lost",
        _transient_faults,
    ),
    Case("hosted fault", "HTTP 400 with a reason", "the reason shown; not retried", _refusal),
    Case(
        "hosted fault",
        "server trickles one byte per 0.2 s (timeout_s 0.5)",
        "wall-clock deadline ends it",
        _trickle,
    ),
    Case(
        "hosted fault",
        "teacher answers in prose (no grade parses)",
        "query fails; nothing cached",
        _never_parses,
    ),
    Case(
        "hosted fault",
        "server restarted after a finished query",
        "answers come from the cache",
        _restart_resumes,
    ),
    Case(
        "hosted fault",
        "2 processes on one folder with a hosted teacher",
        "no prompt sent twice",
        _hosted_two_processes,
    ),
]
