"""Reliability cases: bad inputs and stale results (in-process CLI calls)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest.mock import patch

import presentation_dependence.runners as runners
from presdep_tools.reliability import Case
from presdep_tools.reliability.workspace import Workspace, expect
from presentation_dependence.io.fixture import read_fixture, write_fixture
from presentation_dependence.io.trec import format_qrels, format_run, write_topics
from presentation_dependence.records import Candidate, Qrels, Query, RerankRequest, Run, RunEntry

__all__ = ["INPUT_CASES", "STALE_CASES", "TOKEN", "judge_config", "metrics", "run_eval"]

TOKEN = "hf_RELIABILITY_0123456789abcdef"


def run_eval(ws: Workspace, cfg: Path, run_dir: str, *extra: str) -> tuple[int, str]:
    return ws.cli("run", str(cfg), "--run-dir", str(ws.root / run_dir), "--eval", *extra)


def metrics(ws: Workspace, run_dir: str) -> dict:
    return dict(json.loads((ws.root / run_dir / "metrics.json").read_text()))


def _trec_set(ws: Workspace, bom: bool) -> Path:
    """The smoke fixture as a TREC run + corpus + topics + qrels (TrecRunLoader), optionally
    each file with a UTF-8 byte-order mark."""
    requests, qrels = read_fixture(ws.fixture)
    pre = "\ufeff" if bom else ""
    run = Run(
        {
            r.query.qid: tuple(
                RunEntry(r.query.qid, c.docid, c.rank, c.score) for c in r.candidates
            )
            for r in requests
        }
    )
    files = {
        "run.trec": format_run(run),
        "qrels.txt": format_qrels(qrels),
        "corpus.tsv": "".join(f"{c.docid}\t{c.text}\n" for r in requests for c in r.candidates),
    }
    for name, text in files.items():
        (ws.root / name).write_text(pre + text, encoding="utf-8")
    write_topics([(r.query.qid, r.query.text) for r in requests], ws.root / "topics.tsv")
    topics = ws.root / "topics.tsv"
    topics.write_text(pre + topics.read_text(encoding="utf-8"), encoding="utf-8")
    data = {name.split(".")[0]: str(ws.root / name) for name in files}
    data.update(topics=str(topics), dataloader_class="TrecRunLoader")
    return ws.config("trec-bom" if bom else "trec", data=data)


def bom_everywhere(root: Path) -> str:
    ws = Workspace(root)
    rc_a, _ = run_eval(ws, _trec_set(ws, bom=False), "plain")
    rc_b, log = run_eval(ws, _trec_set(ws, bom=True), "bom")
    expect(rc_a == 0 and rc_b == 0, f"exit codes {rc_a}, {rc_b}: {log[-300:]}")
    a, b = metrics(ws, "plain"), metrics(ws, "bom")
    expect(a["per_query"] == b["per_query"], "metrics differ with a BOM")
    return f"exit 0; nDCG@10 {b['mean']['ndcg@10']:.4f} over {b['num_queries']} queries, as without"


def _bad_fixture_line(root: Path) -> str:
    ws = Workspace(root)
    with ws.fixture.open("a", encoding="utf-8") as f:
        f.write('{"qid": "q7", "query": "x", "candidates": [ oops\n')
    rc, log = run_eval(ws, ws.config(), "run")
    expect(rc == 2 and "fixture.jsonl:7" in log and "Fix:" in log, f"exit {rc}: {log[-300:]}")
    expect(not (ws.root / "run" / "resolved_config.yaml").exists(), "a config was frozen")
    line = next(x for x in log.splitlines() if "fixture.jsonl:7" in x)
    return f"exit 2: {line[line.index('fixture.jsonl:7') :][:110]}..."


def _id_with_space(root: Path) -> str:
    ws = Workspace(root)
    cfg = _trec_set(ws, bom=False)
    topics = ws.root / "topics.tsv"
    topics.write_text(topics.read_text().replace("smoke-2\t", "smoke 2\t"), encoding="utf-8")
    rc, log = run_eval(ws, cfg, "run")
    expect(rc == 2 and "topics.tsv:2" in log and "whitespace" in log, f"exit {rc}: {log[-300:]}")
    return "exit 2 before any compute: topics.tsv:2 names the id and the fix"


def _long_and_odd_ids(root: Path) -> str:
    ws = Workspace(root)
    requests, qrels = read_fixture(ws.fixture)
    qids = ["q" * 300, "a/b%2F..", "ünïcødé-" * 30, ".hidden", "x", "y"]
    renamed = [
        RerankRequest(Query(q, r.query.text), r.candidates)
        for q, r in zip(qids, requests, strict=True)
    ]
    judged = {q: qrels.judgements[r.query.qid] for q, r in zip(qids, requests, strict=True)}
    write_fixture(ws.fixture, renamed, Qrels(judged))
    rc, log = run_eval(ws, ws.config(), "run")
    expect(rc == 0, f"exit {rc}: {log[-300:]}")
    m = metrics(ws, "run")
    expect(m["num_queries"] == 6, f"{m['num_queries']} queries evaluated")
    return "exit 0; 6 queries stored under safe file names and evaluated"


def _typo_then_fixed(override: str) -> Callable[[Path], str]:
    def case(root: Path) -> str:
        ws = Workspace(root)
        cfg = ws.config()
        rc1, log = ws.cli("run", str(cfg), "--run-dir", str(root / "run"), "-o", override)
        rc2, log2 = ws.cli("run", str(cfg), "--run-dir", str(root / "run"))
        expect(rc1 == 2 and rc2 == 0, f"exit codes {rc1} then {rc2}: {log2[-300:]}")
        msg = log.splitlines()[-1].split("presentation_dependence.cli: ", 1)[-1]
        return f"exit 2 ({msg[:70]}...), then the corrected rerun in the same folder: exit 0"

    return case


def _unmatched_judgements(root: Path) -> str:
    ws = Workspace(root)
    _, qrels = read_fixture(ws.fixture)
    extra = {**qrels.judgements, "ghost-1": {"d": 1}, "ghost-2": {"d": 2, "e": 0}}
    (root / "qrels.txt").write_text(format_qrels(Qrels(extra)), encoding="utf-8")
    rc, log = run_eval(ws, ws.config(data={"qrels": str(root / "qrels.txt")}), "run")
    expect(rc == 0 and "2 of 8 judged queries (3 judgements)" in log, f"exit {rc}: {log[-300:]}")
    return "exit 0 with a warning: 2 of 8 judged queries (3 judgements) match no query"


def _undecodable_qrels(root: Path) -> str:
    ws = Workspace(root)
    (root / "qrels.txt").write_bytes(b"smoke-1 0 smoke-1-d00 1\nsmoke-1 0 \xff\xfe 1\n")
    rc, log = run_eval(ws, ws.config(data={"qrels": str(root / "qrels.txt")}), "run")
    expect(rc == 2 and "qrels.txt:2" in log and "UTF-8" in log, f"exit {rc}: {log[-300:]}")
    return "exit 2: qrels.txt:2 expected UTF-8 text, with the iconv fix"


def _eval_missing_vs_unfinished(root: Path) -> str:
    ws = Workspace(root)
    rc1, log1 = ws.cli("eval", "--run-dir", str(root / "nowhere"))
    ws.cli("run", str(ws.config()), "--run-dir", str(root / "part"), "--shard", "0/2")
    rc2, log2 = ws.cli("eval", "--run-dir", str(root / "part"))
    expect(rc1 == 2 and "does not exist" in log1 and "unfinished" not in log1, log1[-200:])
    expect(rc2 == 2 and "unfinished" in log2, log2[-200:])
    return "missing folder: exit 2 'does not exist'; half-run folder: exit 2 'unfinished'"


def _internal_error(root: Path) -> str:
    ws = Workspace(root)
    (root / "r").mkdir()

    def bug(self: object) -> dict[str, object]:
        raise ZeroDivisionError("division by zero")

    with patch.object(runners.EvalManager, "evaluate", bug):
        rc, log = ws.cli("eval", "--run-dir", str(root / "r"))
    expect(rc == 3 and "internal error" in log and "Traceback" not in log, f"exit {rc}: {log}")
    return "exit 3, one line naming the error and --debug; no traceback"


def judge_config(root: Path, rows: list[dict[str, Any]] | None = None, **blocks: object) -> Path:
    """``root/judge.yaml`` judging ``rows`` (default: 4 two-response items) with the scripted
    judge, plus ``blocks``."""
    items = root / "items.jsonl"
    rows = rows or [
        {"id": f"i{i}", "prompt": "p", "responses": ["a", "b"], "labels": [True, False]}
        for i in range(4)
    ]
    items.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = root / "judge.yaml"
    body = {"data": {"dataset": "jsonl", "path": str(items)}, "judge": {"judge_class": "scripted"}}
    cfg.write_text(json.dumps({**body, **blocks}))
    return cfg


def _gate_crashes(root: Path) -> str:
    ws = Workspace(root)
    cache = root / "cache"
    cfg = judge_config(root, gate={"k": 2, "cache_dir": str(cache)})
    (root / "folder").mkdir()
    rc1, log1 = ws.cli("gate", str(cfg), "--verdict", str(root / "folder"))
    ws.cli("gate", str(cfg), "--verdict", str(root / "v.json"))
    (cache_file,) = cache.glob("*.jsonl")
    cache_file.write_bytes(b"\x00\xff garbage\n")
    rc2, log2 = ws.cli("gate", str(cfg), "--verdict", str(root / "v.json"))
    expect(rc1 == 2 and "is a folder" in log1, f"exit {rc1}: {log1[-200:]}")
    expect(rc2 == 2 and f"{cache_file.name}:1" in log2, f"exit {rc2}: {log2[-200:]}")
    return "--verdict naming a folder: exit 2; garbled cache: exit 2 naming file:line (never 1)"


def _judge_other_config(root: Path) -> str:
    ws = Workspace(root)
    cfg = judge_config(root)
    ws.cli("judge", str(cfg), "--out", str(root / "out"))
    before = (root / "out" / "records.jsonl").read_bytes()
    rc, log = ws.cli("judge", str(cfg), "--out", str(root / "out"), "-o", "seed=7")
    after = (root / "out" / "records.jsonl").read_bytes()
    expect(rc == 2 and "different config" in log and before == after, f"exit {rc}")
    return "exit 2 'different config'; the folder's records untouched"


def _from_scores_empty(root: Path) -> str:
    ws = Workspace(root)
    rc, _ = ws.cli("psi", str(ws.config()), "--run-dir", str(root / "r"), "--from-scores")
    frozen = (root / "r" / "resolved_config.yaml").exists()
    expect(rc == 2 and not frozen, f"exit {rc}, config frozen: {frozen}")
    return "exit 2 'run presdep psi first'; no config frozen, the folder stays usable"


def _changed(kind: str) -> Callable[[Path], str]:
    def case(root: Path) -> str:
        ws = Workspace(root)
        cfg = ws.config()
        run_eval(ws, cfg, "run")
        requests, qrels = read_fixture(ws.fixture)
        r = requests[2]
        judged = {q: dict(d) for q, d in qrels.judgements.items()}
        if kind == "query text":
            requests[2] = RerankRequest(Query(r.query.qid, "another question"), r.candidates)
        elif kind == "passage text":
            c = r.candidates[0]
            new = Candidate(c.docid, "other words", c.rank, c.score)
            requests[2] = RerankRequest(r.query, (new, *r.candidates[1:]))
        else:
            d = r.candidates[0].docid
            judged[r.query.qid][d] = (judged[r.query.qid].get(d, 0) + 1) % 4
        write_fixture(ws.fixture, requests, Qrels(judged))
        rc1, log1 = run_eval(ws, cfg, "run")
        expect(rc1 == 2 and "smoke-3" in log1, f"exit {rc1}: {log1[-300:]}")
        rc2, _ = run_eval(ws, cfg, "run", "--recompute-changed")
        rc3, _ = run_eval(ws, cfg, "fresh")
        expect(rc2 == rc3 == 0, f"exit codes {rc2}, {rc3}")
        expect(metrics(ws, "run") == metrics(ws, "fresh"), "recomputed metrics differ")
        return "exit 2 naming smoke-3; with --recompute-changed metrics equal a fresh folder's"

    return case


def _path_switch(root: Path) -> str:
    ws = Workspace(root)
    local = root / "local" / "fixture.jsonl"
    cfg = ws.config(data={"path": [str(local), str(ws.fixture)]})
    run_eval(ws, cfg, "run")
    requests, qrels = read_fixture(ws.fixture)
    requests[2] = RerankRequest(
        Query(requests[2].query.qid, "fetched later"), requests[2].candidates
    )
    write_fixture(local, requests, qrels)
    rc, log = run_eval(ws, cfg, "run")
    frozen = (root / "run" / "resolved_config.yaml").read_text()
    expect("data.path ->" in frozen, "resolved paths not recorded")
    expect(rc == 2 and "now resolves to" in log and "smoke-3" in log, f"exit {rc}: {log[-300:]}")
    return "recorded in resolved_config.yaml; the switch is logged and smoke-3 refused (exit 2)"


INPUT_CASES = [
    Case(
        "bad input",
        "UTF-8 BOM in run, topics, corpus and qrels",
        "read as without the BOM",
        bom_everywhere,
    ),
    Case(
        "bad input",
        "malformed fixture line",
        "exit 2 naming file:line and the fix; no config frozen",
        _bad_fixture_line,
    ),
    Case(
        "bad input",
        "query id with a space",
        "exit 2 on the line it is read, before compute",
        _id_with_space,
    ),
    Case(
        "bad input",
        "300-char, slashed, non-ASCII and dot qids",
        "stored and evaluated",
        _long_and_odd_ids,
    ),
    Case(
        "bad input",
        "typo in data.dataloader_class",
        "exit 2, then the corrected rerun is accepted",
        _typo_then_fixed("data.dataloader_class=FixtureLoadr"),
    ),
    Case(
        "bad input",
        "typo in data.path",
        "exit 2, then the corrected rerun is accepted",
        _typo_then_fixed("data.path=data/fixture.jsonll"),
    ),
    Case(
        "bad input",
        "reranker refuses (hosted 400), fixed by a config change",
        "exit 2, then the corrected config is accepted in the same folder",
        _typo_then_fixed("reranker.refuse=true"),
    ),
    Case(
        "bad input",
        "judgements for queries the data lacks",
        "a warning with counts",
        _unmatched_judgements,
    ),
    Case("bad input", "undecodable byte in qrels", "exit 2 naming file:line", _undecodable_qrels),
    Case(
        "bad input",
        "eval: missing folder vs unfinished run",
        "two different messages, exit 2",
        _eval_missing_vs_unfinished,
    ),
    Case(
        "bad input",
        "internal error (a bug)",
        "exit 3, no traceback without --debug",
        _internal_error,
    ),
    Case(
        "bad input",
        "gate: --verdict names a folder; garbled verdict cache",
        "exit 2, never the gate's fail code 1",
        _gate_crashes,
    ),
    Case(
        "bad input",
        "judge --out of a folder of another config",
        "refused; records untouched",
        _judge_other_config,
    ),
    Case(
        "bad input",
        "psi --from-scores on an empty folder",
        "exit 2; no config frozen",
        _from_scores_empty,
    ),
]
STALE_CASES = [
    Case(
        "stale results",
        "query text changed under the same config",
        "refused naming the query; --recompute-changed equals a fresh run",
        _changed("query text"),
    ),
    Case(
        "stale results",
        "passage text changed under the same config",
        "refused naming the query; --recompute-changed equals a fresh run",
        _changed("passage text"),
    ),
    Case(
        "stale results",
        "one judgement changed under the same config",
        "refused naming the query; --recompute-changed equals a fresh run",
        _changed("judgement"),
    ),
    Case(
        "stale results",
        "a path alternative starts to resolve elsewhere",
        "recorded, logged, changed queries refused",
        _path_switch,
    ),
]
