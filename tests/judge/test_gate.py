"""The noise-aware gate on a scripted judge whose accuracy and noise are known."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from presentation_dependence.cli import main
from presentation_dependence.judge.gate import CHUNK, GateConfig, quantise, run_gate
from presentation_dependence.judge.judges.base import build_judge
from presentation_dependence.judge.judges.scripted import ScriptedJudge, ScriptedJudgeOptions
from presentation_dependence.judge.placement import make_requests
from tests.judge.conftest import make_items


def gate_config(tmp: Path, items: Path, *, judge: dict[str, Any], gate: dict[str, Any]) -> Path:
    cfg = {
        "data": {"dataset": "jsonl", "path": str(items)},
        "judge": {"judge_class": "scripted", **judge},
        "placement": {"mode": "seeded"},
        "gate": gate,
        "output_root": str(tmp / "runs"),
    }
    path = tmp / f"gate-{len(list(tmp.glob('gate-*.yaml')))}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def run(cfg: Path, tmp: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    out = tmp / "verdict.json"
    code = main(["gate", str(cfg), "--verdict", str(out), *extra])
    return code, json.loads(out.read_text())


def test_scripted_judge_has_the_stated_call_accuracy() -> None:
    opts = ScriptedJudgeOptions(accuracy=0.7, noise=0.4, parse_failure=0.1, seed=3)
    judge = ScriptedJudge(opts)
    reqs = make_requests(make_items(200), "seeded", 0, repeats=10)
    recs = judge.judge(reqs)
    p = opts.call_accuracy(4)  # 0.9 * (0.7 * 0.6 + 0.1) = 0.468
    acc = np.mean([r.correct for r in recs])
    assert abs(acc - p) < 4 * np.sqrt(p * (1 - p) / len(recs))
    fail = np.mean([not r.parsed for r in recs])
    assert abs(fail - 0.1) < 4 * np.sqrt(0.09 / len(recs))
    assert judge.judge(reqs[:50]) == recs[:50]  # seeded: the same calls give the same records


def test_exit_codes_pass_and_fail(tmp_path: Path, items_file: Path) -> None:
    good = gate_config(tmp_path, items_file, judge={"accuracy": 0.95, "noise": 0.1}, gate={"k": 3})
    code, v = run(good, tmp_path)
    assert (code, v["decision"], v["exit_code"]) == (0, "pass", 0)
    bad = gate_config(tmp_path, items_file, judge={"accuracy": 0.05, "noise": 0.1}, gate={"k": 3})
    code, v = run(bad, tmp_path)
    assert (code, v["decision"]) == (1, "fail")
    assert v["reason"].startswith("FAIL: mean") and "more than the measured noise" in v["reason"]


def test_exit_code_respects_the_measured_noise(tmp_path: Path, items_file: Path) -> None:
    judge = {"accuracy": 0.5, "noise": 0.8}
    probe = gate_config(tmp_path, items_file, judge=judge, gate={"k": 4, "threshold": 0.0})
    _, v = run(probe, tmp_path)
    mean, margin = v["mean"], v["margin"]
    n, k = v["n_cases"], v["k_used"]
    variances = [np.var(c["calls"], ddof=1) for c in v["per_case"]]
    assert margin == pytest.approx(2.0 * np.sqrt(sum(variances) / k) / n)
    assert margin > 0.02
    within = gate_config(
        tmp_path, items_file, judge=judge, gate={"k": 4, "threshold": mean + margin / 2}
    )
    code, v = run(within, tmp_path)
    assert (code, v["decision"]) == (0, "pass_within_noise")
    beyond = gate_config(
        tmp_path, items_file, judge=judge, gate={"k": 4, "threshold": mean + 1.5 * margin}
    )
    code, v = run(beyond, tmp_path)
    assert (code, v["decision"]) == (1, "fail")
    # The same shortfall with a noiseless judge fails: no noise was measured to excuse it.
    quiet = gate_config(
        tmp_path, items_file, judge={"accuracy": 0.5, "noise": 0.0}, gate={"k": 4, "threshold": 0.0}
    )
    _, v = run(quiet, tmp_path)
    assert v["margin"] == 0.0
    code, v = run(quiet, tmp_path, "--threshold", str(v["mean"] + 0.01))
    assert (code, v["decision"]) == (1, "fail")


def test_k1_measures_no_noise(tmp_path: Path, items_file: Path) -> None:
    cfg = gate_config(tmp_path, items_file, judge={"noise": 0.5}, gate={"k": 1, "threshold": 0.99})
    code, v = run(cfg, tmp_path)
    assert code == 1 and v["margin"] == 0.0 and "no noise measured" in v["reason"]


def test_cache_reuses_calls_and_is_keyed_on_identity(tmp_path: Path) -> None:
    cases = make_requests(make_items(10), "seeded", 0)
    cfg = GateConfig(threshold=0.5, k=3, cache_dir=str(tmp_path / "cache"))
    judge = ScriptedJudge(ScriptedJudgeOptions(noise=0.3))
    first = run_gate(judge, cases, cfg)
    assert first.details["calls_judged"] == 30 and judge.calls == 30
    again = ScriptedJudge(ScriptedJudgeOptions(noise=0.3))
    second = run_gate(again, cases, cfg)
    assert again.calls == 0 and second.details["cache_hits"] == 30
    assert second.details["mean"] == first.details["mean"]
    key = first.details["cache_key"]
    ident = json.loads((tmp_path / "cache" / f"{key}.json").read_text())
    assert set(ident) == {
        "judge_class",
        "model_snapshot",
        "prompt_version",
        "parser_version",
        "seed",
    }
    other = run_gate(ScriptedJudge(ScriptedJudgeOptions(noise=0.3, seed=1)), cases, cfg)
    assert other.details["cache_key"] != key and other.details["cache_hits"] == 0


def test_known_calls_stand_in_for_the_calls_they_are(tmp_path: Path) -> None:
    # a study's sweep (repeat 0) and rerun (repeat 1) of the same cases by the same judge
    cases = make_requests(make_items(10), "seeded", 0)
    opts = ScriptedJudgeOptions(noise=0.3)
    sweep = ScriptedJudge(opts).judge(cases)
    rerun = ScriptedJudge(opts).judge([replace(c, repeat=1) for c in cases])
    other = ScriptedJudge(opts).judge([replace(c, repeat=5) for c in cases])  # not a gate call
    cfg = GateConfig(threshold=0.5, k=3, cache_dir=str(tmp_path / "cache"))
    judge = ScriptedJudge(opts)
    verdict = run_gate(judge, cases, cfg, known=[*sweep, *rerun, *other])
    assert judge.calls == 10 and verdict.details["calls_judged"] == 10
    assert verdict.details["calls_reused"] == 20 and verdict.details["cache_hits"] == 20
    whole = run_gate(ScriptedJudge(opts), cases, GateConfig(threshold=0.5, k=3))
    assert verdict.details["per_case"] == whole.details["per_case"]
    assert verdict.details["noise_se"] > 0  # the noise is measured over the three calls
    # the cache holds every call, so a second gate judges nothing and reuses nothing
    again = run_gate(ScriptedJudge(opts), cases, cfg, known=sweep)
    assert (again.details["calls_judged"], again.details["calls_reused"]) == (0, 0)


class _Interrupted(RuntimeError):
    pass


class _StopsAfter(ScriptedJudge):
    """A scripted judge that dies on its ``limit + 1``-th batch (a killed process)."""

    def __init__(self, opts: ScriptedJudgeOptions, limit: int) -> None:
        super().__init__(opts)
        self.batches, self.limit = 0, limit

    def judge(self, requests, **kwargs):  # type: ignore[no-untyped-def]
        if self.batches == self.limit:
            raise _Interrupted
        self.batches += 1
        return super().judge(requests, **kwargs)


def test_an_interrupted_gate_resumes_at_the_last_chunk(tmp_path: Path) -> None:
    cases = make_requests(make_items(30), "seeded", 0)  # 30 cases x k=3 = 90 calls
    cfg = GateConfig(threshold=0.5, k=3, cache_dir=str(tmp_path / "cache"))
    opts = ScriptedJudgeOptions(noise=0.3)
    with pytest.raises(_Interrupted):
        run_gate(_StopsAfter(opts, limit=2), cases, cfg)
    resumed = ScriptedJudge(opts)
    verdict = run_gate(resumed, cases, cfg)
    assert verdict.details["cache_hits"] == 2 * CHUNK and resumed.calls == 90 - 2 * CHUNK
    whole = run_gate(ScriptedJudge(opts), cases, GateConfig(threshold=0.5, k=3))
    assert verdict.details["mean"] == whole.details["mean"]
    assert verdict.details["per_case"] == whole.details["per_case"]


def test_adaptive_spends_k_only_near_the_threshold() -> None:
    cases = make_requests(make_items(20), "seeded", 0)
    judge = build_judge("scripted", ScriptedJudgeOptions(accuracy=0.6, noise=0.5))
    far = run_gate(judge, cases, GateConfig(threshold=0.0, k=6, k_min=2, adaptive=True))
    assert (far.details["k_used"], far.details["escalated"]) == (2, False)
    mean = far.details["mean"]
    near = run_gate(judge, cases, GateConfig(threshold=mean, k=6, k_min=2, adaptive=True))
    assert (near.details["k_used"], near.details["escalated"]) == (6, True)


def test_quantise() -> None:
    assert quantise(1 / 3, 0.05) == 0.35
    assert quantise(0.3333, 0.0) == 0.3333
    assert quantise(0.125, 0.05) == 0.1  # half to even
    assert quantise(0.7, 0.1) == 0.7


def test_user_errors_exit_2(tmp_path: Path, items_file: Path) -> None:
    bad = gate_config(tmp_path, items_file, judge={"accuracy": 2.0}, gate={})
    assert main(["gate", str(bad)]) == 2
    typo = gate_config(tmp_path, items_file, judge={}, gate={"treshold": 0.5})
    assert main(["gate", str(typo)]) == 2
