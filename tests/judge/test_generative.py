"""The generative N-way judge on the tiny random model: records, reproducibility, batching."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from presentation_dependence.errors import ConfigError
from presentation_dependence.judge.items.records import write_records
from presentation_dependence.judge.judges.generative import (
    JUDGE_TEMPLATES,
    TransformersJudge,
    TransformersJudgeOptions,
)
from presentation_dependence.judge.placement import make_requests
from presentation_dependence.judge.scoring.noise import rerun_comparisons
from presentation_dependence.judge.sweep import run_noise
from presentation_dependence.runners.run_folder import RunFolder
from tests.judge.conftest import make_items


def judge(tiny: str, **kw: object) -> TransformersJudge:
    kw.setdefault("max_new_tokens", 8)
    opts = TransformersJudgeOptions(model_name=tiny, device="cpu", dtype="float32", **kw)  # type: ignore[arg-type]
    return TransformersJudge(opts)


def test_template_renders_n_letters_and_versions_its_text() -> None:
    t = JUDGE_TEMPLATES["judge_nway_v1"]
    four = t.render("Q?", ["a1", "a2", "a3", "a4"])
    assert '"[[A]]" if assistant A is best' in four and '"[[D]]" if assistant D is best' in four
    assert "[The Start of Assistant D's Answer]\na4\n[The End of Assistant D's Answer]" in four
    two = t.render("Q?", ["x", "y"])
    assert '"[[A]]" if assistant A is best or "[[B]]" if assistant B is best' in two
    assert t.version.startswith("judge_nway_v1:") and len(t.version) == len("judge_nway_v1:") + 12
    edited = replace(t, instruction=t.instruction.replace("impartial", "fair"))
    assert edited.version != t.version


def test_records_keep_everything_and_rerun_identically(tiny_model: str, tmp_path: Path) -> None:
    reqs = make_requests(make_items(1), "cyclic", 0)
    j = judge(tiny_model)
    first = j.judge(reqs)
    assert len(first) == 4
    for req, rec in zip(reqs, first, strict=True):
        assert rec.placement == req.placement and rec.correct_slot == req.correct_slot
        assert 0 < len(rec.token_ids) <= 8 and rec.finish in ("eos", "length")
        assert rec.prompt_tokens > 100 and rec.parse_status in (
            "ok",
            "no_marker",
            "multiple_markers",
            "invalid_marker",
        )
    again = judge(tiny_model).judge(reqs)
    assert again == first
    a = write_records(tmp_path / "a.jsonl", first).read_bytes()
    assert a == write_records(tmp_path / "b.jsonl", again).read_bytes()
    assert j.judge(reqs, one_at_a_time=True) == first
    batched = j.judge(reqs, batch_size=4)
    assert [r.key for r in batched] == [r.key for r in first]


def test_identity_and_describe(tiny_model: str) -> None:
    j = judge(tiny_model, parser_rule="last", seed=3)
    ident = j.identity()
    assert ident.model_snapshot.startswith("local-sha256:")
    assert ident.prompt_version == JUDGE_TEMPLATES["judge_nway_v1"].version
    assert (ident.parser_version, ident.seed) == ("verdict-last-v1", 3)
    assert ident.cache_key() != judge(tiny_model).identity().cache_key()
    d = j.describe()
    assert d["decoding"] == "greedy (temperature 0)" and d["eos_token_ids"]


def test_run_noise_on_cpu_reruns_are_identical(tiny_model: str, tmp_path: Path) -> None:
    reqs = make_requests(make_items(1), "cyclic", 0)
    j = judge(tiny_model, max_new_tokens=4)
    res = run_noise(j, reqs, RunFolder(tmp_path), repeats=2, batch_sizes=[1, 2])
    assert res is not None
    within = [c for c in rerun_comparisons(res.runs) if "vs run 0" in c["label"]]
    assert len(within) == 2 and all(c["identical_share"] == 1.0 for c in within)
    assert all(c["flips"] == 0 for c in within)


def test_a_killed_noise_run_resumes_to_identical_records(
    tiny_model: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reqs = make_requests(make_items(3), "cyclic", 0)
    j = judge(tiny_model, max_new_tokens=4)
    kw: dict[str, Any] = {"repeats": 2, "batch_sizes": [2], "one_at_a_time": True}
    ref = run_noise(j, reqs, RunFolder(tmp_path / "ref"), **kw)
    real, calls = TransformersJudge.judge, []

    def dies_on_the_fourth_call(self: TransformersJudge, requests: Any, **k: Any) -> Any:
        calls.append(len(requests))
        if len(calls) == 4:
            raise KeyboardInterrupt  # killed while batch_size=2 run 1 is in flight
        return real(self, requests, **k)

    monkeypatch.setattr(TransformersJudge, "judge", dies_on_the_fourth_call)
    with pytest.raises(KeyboardInterrupt):
        run_noise(j, reqs, RunFolder(tmp_path / "killed"), **kw)
    monkeypatch.setattr(TransformersJudge, "judge", real)
    resumed = run_noise(j, reqs, RunFolder(tmp_path / "killed"), **kw)
    assert ref is not None and resumed is not None
    assert resumed.runs == ref.runs
    run1 = tmp_path / "killed" / "noise" / "batch_size2" / "run1"
    assert len(list(run1.glob("part*.json"))) == 3  # 3 parts of one item (4 = 2 batches of 2)


def test_prompt_over_context_is_refused(tiny_model: str) -> None:
    reqs = make_requests(make_items(1), "seeded", 0)
    with pytest.raises(ConfigError, match="exceed the model's context"):
        judge(tiny_model, max_new_tokens=4090).judge(reqs)


def test_options_are_validated() -> None:
    with pytest.raises(ConfigError):
        TransformersJudgeOptions(parser_rule="first")
    with pytest.raises(ConfigError):
        TransformersJudgeOptions(template="nope")
    with pytest.raises(ConfigError):
        TransformersJudgeOptions(max_new_tokens=0)


def test_answer_prefix_is_prefilled_and_parsed_with_the_response(tiny_model: str) -> None:
    reqs = make_requests(make_items(1), "seeded", 0)
    plain = judge(tiny_model, max_new_tokens=2, template="judge_nway_verdict_v1")
    pre = judge(
        tiny_model, max_new_tokens=2, template="judge_nway_verdict_v1", answer_prefix="Verdict: [["
    )
    (a,), (b,) = plain.judge(reqs), pre.judge(reqs)
    assert b.judgement.startswith("Verdict: [[") and not a.judgement.startswith("Verdict: [[")
    assert b.prompt_tokens > a.prompt_tokens and len(b.token_ids) <= 2
    assert pre.identity().prompt_version.startswith(plain.identity().prompt_version + "+prefix:")
