"""run_noise on a scripted judge: known noise in, measured noise out."""

from __future__ import annotations

import pytest

from presentation_dependence.judge.judges.scripted import ScriptedJudge, ScriptedJudgeOptions
from presentation_dependence.judge.placement import make_requests
from presentation_dependence.judge.scoring.noise import rerun_comparisons
from presentation_dependence.judge.sweep import run_noise
from presentation_dependence.runners.run_folder import RunFolder
from tests.judge.conftest import make_items


def test_noiseless_judge_reruns_identically(tmp_path) -> None:
    reqs = make_requests(make_items(10), "cyclic", 0)
    res = run_noise(
        ScriptedJudge(ScriptedJudgeOptions()),
        reqs,
        RunFolder(tmp_path),
        repeats=3,
        batch_sizes=[1, 4],
    )
    assert res is not None and list(res.runs) == ["batch_size=1", "batch_size=4"]
    comparisons = rerun_comparisons(res.runs)
    labels = [c["label"] for c in comparisons]
    assert labels == [
        "batch_size=1: run 1 vs run 0",
        "batch_size=1: run 2 vs run 0",
        "batch_size=4: run 1 vs run 0",
        "batch_size=4: run 2 vs run 0",
        "batch_size=4 vs batch_size=1 (run 0)",
    ]
    # the judgement text names the repeat, so only the verdicts are compared here
    assert all(c["flips"] == 0 and c["noise_to_se"] == 0.0 for c in comparisons)
    assert comparisons[-1]["identical_share"] == 1.0


def test_noisy_judge_flips_at_the_expected_rate(tmp_path) -> None:
    reqs = make_requests(make_items(150), "cyclic", 0)
    noise = 0.5
    judge = ScriptedJudge(ScriptedJudgeOptions(accuracy=0.6, noise=noise))
    res = run_noise(judge, reqs, RunFolder(tmp_path), repeats=2)
    assert res is not None
    c = rerun_comparisons(res.runs)[0]
    # a call keeps its latent verdict w.p. 1 - noise; two calls then differ in right/wrong w.p.
    # 2 q (1 - q) over latent-correct (q = noise * 3/4 moves it off) and similar for wrong ones.
    q_right = noise * 3 / 4
    q_wrong = noise / 4
    expected = 0.6 * 2 * q_right * (1 - q_right) + 0.4 * 2 * q_wrong * (1 - q_wrong)
    assert c["flip_share"] == pytest.approx(expected, abs=0.05)
    assert c["noise_to_se"] > 0 and c["first_diff"]["unit"] == "char"


def test_reference_is_reused_and_checked(tmp_path) -> None:
    reqs = make_requests(make_items(5), "cyclic", 0)
    judge = ScriptedJudge(ScriptedJudgeOptions())
    ref = judge.judge(reqs)
    calls = judge.calls
    res = run_noise(judge, reqs, RunFolder(tmp_path), repeats=2, reference=ref)
    assert judge.calls == calls + len(reqs)
    assert res is not None and res.runs["configured"][0] == ref
    with pytest.raises(ValueError, match="reference"):
        run_noise(judge, reqs, RunFolder(tmp_path), repeats=1, reference=ref[:-1])
    with pytest.raises(ValueError, match="duplicate"):
        run_noise(judge, reqs, RunFolder(tmp_path), batch_sizes=[2, 2])
