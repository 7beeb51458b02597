"""Reliability cases of issue 38 (5, 9, 14): judge labels parsed, not coerced; malformed judge
data named by file and line; ``presdep silver`` keeps secrets off disk (in-process CLI calls)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any
from unittest.mock import patch

import yaml

from presdep_tools.reliability import Case
from presdep_tools.reliability.cases_inputs import TOKEN, judge_config
from presdep_tools.reliability.workspace import Workspace, expect
from presentation_dependence.io.fixture import read_fixture, write_fixture
from presentation_dependence.records import Query, RerankRequest

__all__ = ["JUDGE_CASES"]

GSM8K_KEYS = ("6b_finetuning", "6b_verification", "175b_finetuning", "175b_verification")


def _judge(ws: Workspace, cfg: Path, out: str) -> tuple[int, str]:
    return ws.cli("judge", str(cfg), "--out", str(ws.root / out))


def _refused_at(rc: int, log: str, where: str) -> str:
    """The refusal's line, after checking it is exit 2 naming ``where`` with a fix."""
    line = next((x for x in log.splitlines() if where in x), "")
    expect(rc == 2 and "Fix:" in line, f"exit {rc}: {log[-300:]}")
    return line[line.index(where) :]


def _quoted_boolean(root: Path) -> str:
    ws = Workspace(root)
    rows = [
        {"id": "a", "prompt": "p", "responses": ["x", "y"], "labels": [True, False]},
        {"id": "b", "prompt": "p", "responses": ["x", "y"], "labels": ["false", True]},
    ]
    rc, log = _judge(ws, judge_config(root, rows), "out")
    line = _refused_at(rc, log, "items.jsonl:2")
    expect(not (root / "out" / "records.jsonl").exists(), "records were written")
    return f'exit 2 (bool("false") was True): {line[:110]}'


def _llmbar(root: Path, label: Any) -> tuple[int, str]:
    ws = Workspace(root / str(label))
    item = {"input": "i", "output_1": "a", "output_2": "b"}
    items = [{**item, "label": 1}, {**item, "label": label} if label != "missing" else item]
    (ws.root / "Natural.json").write_text(json.dumps(items), encoding="utf-8")
    cfg = ws.root / "judge.yaml"
    data = {"dataset": "llmbar", "path": str(ws.root / "Natural.json")}
    cfg.write_text(yaml.safe_dump({"data": data, "judge": {"judge_class": "scripted"}}))
    return _judge(ws, cfg, "out")


def _llmbar_labels(root: Path) -> str:
    lines = []
    for label in (2.7, True, None, "missing"):
        rc, log = _llmbar(root, label)
        lines.append(_refused_at(rc, log, "Natural.json (item 1"))
    return f"exit 2 for 2.7, true, null and a missing label: {lines[0][:100]}"


def _gsm8k_not_json(root: Path) -> str:
    ws = Workspace(root)
    sols = {k: {"is_correct": k == GSM8K_KEYS[0], "solution": "s"} for k in GSM8K_KEYS}
    path = root / "solutions.jsonl"
    path.write_text(json.dumps({"question": "q", **sols}) + "\n{not json\n", encoding="utf-8")
    cfg = root / "judge.yaml"
    data = {"dataset": "gsm8k-model-solutions", "path": str(path)}
    cfg.write_text(yaml.safe_dump({"data": data, "judge": {"judge_class": "scripted"}}))
    rc, log = _judge(ws, cfg, "out")
    return f"exit 2 (was 3, 'a bug'): {_refused_at(rc, log, 'solutions.jsonl:2')[:110]}"


def _silver_config(ws: Workspace, fixture: Path) -> Path:
    data = [{"dataloader_class": "FixtureLoader", "path": str(fixture), "max_queries": 3}]
    silver = {"path": str(ws.root / "out" / "silver.jsonl"), "num_orders": 2, "data": data}
    silver["teacher"] = {"reranker_class": "IdentityReranker"}
    body = {"variant": "single_order", "output_dir": str(ws.root / "student"), "silver": silver}
    path = ws.root / "train.yaml"
    path.write_text(yaml.safe_dump(body), encoding="utf-8")
    return path


def _silver_override(root: Path) -> str:
    ws = Workspace(root)
    with patch.dict(os.environ, {"HF_TOKEN": TOKEN}):
        cfg = _silver_config(ws, ws.fixture)
        rc, log = ws.cli("silver", str(cfg), "-o", f"description=pasted {TOKEN}")
    leaks = ws.files_holding(root / "out", TOKEN)
    expect(rc == 0 and (root / "out" / "silver.jsonl").exists(), f"exit {rc}: {log[-300:]}")
    expect(not leaks, f"the token is on disk in {leaks}")
    head = json.loads((root / "out" / "silver.jsonl").read_text(encoding="utf-8").split("\n")[0])
    shown = head["provenance"]["command"][-1]
    expect(shown == "description=pasted <redacted:HF_TOKEN>", f"the header's command: {shown}")
    return "exit 0; the silver header's command holds <redacted:HF_TOKEN>, never the value"


def _silver_secret_text(root: Path) -> str:
    ws = Workspace(root)
    requests, qrels = read_fixture(ws.fixture)
    r = requests[1]
    requests[1] = RerankRequest(Query(r.query.qid, f"what is {TOKEN}"), r.candidates)
    write_fixture(ws.fixture, requests, qrels)
    with patch.dict(os.environ, {"OPENAI_API_KEY": TOKEN}):
        rc, log = ws.cli("silver", str(_silver_config(ws, ws.fixture)))
    expect(rc == 2 and "OPENAI_API_KEY" in log and TOKEN not in log, f"exit {rc}")
    expect(not ws.files_holding(root / "out", TOKEN), "the secret reached the silver output")
    return "exit 2 naming $OPENAI_API_KEY (not its value); no part or file holding it written"


JUDGE_CASES = [
    Case(
        "bad input",
        'judge jsonl label "false" (a quoted boolean)',
        "refused, file:line",
        _quoted_boolean,
    ),
    Case(
        "bad input",
        "LLMBar label 2.7, true, null or missing",
        "refused, file and item",
        _llmbar_labels,
    ),
    Case(
        "bad input",
        "GSM8K solutions line that is not JSON",
        "exit 2 naming file:line",
        _gsm8k_not_json,
    ),
    Case(
        "secrets",
        "HF_TOKEN pasted via --override (silver)",
        "no file holds the value",
        _silver_override,
    ),
    Case(
        "secrets",
        "an API key inside the silver data (query text)",
        "refused, nothing written",
        _silver_secret_text,
    ),
]
