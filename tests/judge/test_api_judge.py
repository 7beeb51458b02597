"""The judge of a served model (``openai-completions``) against a loopback server that completes
token-id prompts with the tiny model: the same prompt tokens and verdicts as the transformers
judge on that model, any concurrency, the server's load per pass, and clear refusals."""

from __future__ import annotations

import pytest

from presdep_tools.testing.chat_server import ChatServer, TransformersCompleter
from presentation_dependence.errors import ConfigError
from presentation_dependence.judge import build_judge, make_requests
from presentation_dependence.judge.judges.api import (
    ApiJudge,
    ApiJudgeOptions,
    merge_pass_stats,
    parse_prometheus,
)
from presentation_dependence.judge.judges.generative import TransformersJudgeOptions
from presentation_dependence.judge.report import noise_markdown
from presentation_dependence.judge.scoring.noise import summarise_noise
from presentation_dependence.judge.scoring.settings import ScoringSettings
from presentation_dependence.judge.sweep import run_noise
from presentation_dependence.runners.run_folder import RunFolder
from tests.judge.conftest import make_items

PREFIX = "Verdict: [["


@pytest.fixture(scope="module")
def server(tiny_model: str):
    with ChatServer(
        None,
        completer=TransformersCompleter(tiny_model),
        model_root=tiny_model,
        model_name="tiny",
    ) as srv:
        yield srv


def _judge(server: ChatServer, tiny_model: str, **kw: object) -> ApiJudge:
    opts = ApiJudgeOptions(
        base_url=server.url,
        model_name=tiny_model,
        max_new_tokens=6,
        template="judge_nway_verdict_v1",
        answer_prefix=PREFIX,
        **kw,  # type: ignore[arg-type]
    )
    judge = build_judge("openai-completions", opts)
    assert isinstance(judge, ApiJudge)
    return judge


def test_same_prompt_and_verdicts_as_the_transformers_judge(server, tiny_model):
    reqs = make_requests(make_items(3, 4), "cyclic", 0)
    served = _judge(server, tiny_model).judge(reqs)
    local = build_judge(
        "transformers",
        TransformersJudgeOptions(
            model_name=tiny_model,
            device="cpu",
            dtype="float32",
            max_new_tokens=6,
            one_at_a_time=True,
            template="judge_nway_verdict_v1",
            answer_prefix=PREFIX,
        ),
    ).judge(reqs)
    for a, b in zip(served, local, strict=True):
        assert (a.prompt_tokens, a.token_ids, a.finish) == (b.prompt_tokens, b.token_ids, b.finish)
        assert (a.judgement, a.verdict_slot, a.parse_status) == (
            b.judgement,
            b.verdict_slot,
            b.parse_status,
        )
    assert all(r.judgement.startswith(PREFIX) and r.token_ids for r in served)


def test_concurrency_keeps_every_record_and_reports_the_load(server, tiny_model):
    reqs = make_requests(make_items(4, 2), "full", 0)
    judge = _judge(server, tiny_model, metrics_interval_s=0.01)
    one = judge.judge(reqs)
    four = judge.judge(reqs, batch_size=4)
    assert four == one
    p1, p4 = judge.passes
    assert (p1.requests, p1.concurrency, p4.concurrency) == (8, 1, 4)
    assert p4.preemptions == 0.0 and p1.waiting_max in (None, 0.0)
    assert p4.running_max is None or 0.0 <= p4.running_max <= 4.0


def test_identity_is_the_local_copys_and_differs_from_the_transformers_judge(server, tiny_model):
    ident = _judge(server, tiny_model).identity()
    assert ident.judge_class == "openai-completions"
    assert ident.model_snapshot.startswith("local-sha256:")
    assert "+prefix:" in ident.prompt_version


def test_an_unserved_model_is_refused(server, tiny_model):
    judge = _judge(server, tiny_model, served_model="gpt-x")
    with pytest.raises(ConfigError, match=r"serves \['tiny'\], not 'gpt-x'"):
        judge.judge(make_requests(make_items(1, 2), "full", 0))


@pytest.mark.parametrize(
    ("kw", "needle"),
    [
        ({"concurrency": 0}, "concurrency must be an integer >= 1"),
        ({"base_url": "localhost:8000"}, "base_url must be an http"),
        ({"template": "nope"}, "unknown judge template"),
        ({"metrics_interval_s": 0}, "metrics_interval_s must be a number > 0"),
    ],
)
def test_bad_options_are_named(kw, needle):
    with pytest.raises(ConfigError, match=needle):
        ApiJudgeOptions(**kw)  # type: ignore[arg-type]


def test_prometheus_values_are_summed_over_labels():
    text = (
        "# HELP vllm:num_requests_running Number of requests\n"
        'vllm:num_requests_running{engine="0",model_name="m"} 3.0\n'
        'vllm:num_requests_running{engine="1",model_name="m"} 2.0\n'
        "vllm:num_preemptions_total 7\n"
    )
    got = parse_prometheus(text)
    assert got["vllm:num_requests_running"] == 5.0 and got["vllm:num_preemptions_total"] == 7.0


def test_noise_runs_record_the_servers_load_per_run(server, tiny_model, tmp_path):
    reqs = make_requests(make_items(4, 2), "full", 0)
    judge = _judge(server, tiny_model, metrics_interval_s=0.01)
    res = run_noise(judge, reqs, RunFolder(tmp_path), repeats=2, batch_sizes=[1, 4])
    assert res is not None and res.runs["batch_size=4"][0] == res.runs["batch_size=1"][0]
    for cond, want in (("batch_size=1", 1), ("batch_size=4", 4)):
        for load in res.load[cond]:
            assert load is not None and (load["requests"], load["concurrency"]) == (8, want)
            assert load["preemptions"] == 0.0
    # a resumed run reads the load back from its part files
    again = run_noise(judge, reqs, RunFolder(tmp_path), repeats=2, batch_sizes=[1, 4])
    assert again is not None and again.load == res.load
    noise = summarise_noise(again, ScoringSettings(seed=0))
    assert [r["server_load"]["concurrency"] for r in noise["runs"]] == [1, 1, 4, 4]
    assert "requests in flight" in noise_markdown(noise)


def test_pass_stats_merge_over_parts():
    a = {"requests": 2, "concurrency": 2, "seconds": 1.0, "samples": 3, "running_max": 2.0}
    a |= {"running_mean": 1.0, "waiting_max": 0.0, "preemptions": 1.0}
    b = {**a, "samples": 1, "running_mean": 2.0, "running_max": 1.0, "preemptions": 2.0}
    got = merge_pass_stats([a, None, b])
    assert got is not None
    assert (got["requests"], got["samples"], got["running_max"], got["preemptions"]) == (
        4,
        4,
        2.0,
        3.0,
    )
    assert got["running_mean"] == pytest.approx((3 * 1.0 + 1 * 2.0) / 4)
    assert merge_pass_stats([None]) is None


def test_the_servers_version_is_recorded_when_it_tells_it(server, tiny_model):
    assert server.server_version is None  # an OpenAI-compatible server without /version
    assert _judge(server, tiny_model).describe()["server_version"] is None
    with ChatServer(
        None,
        completer=TransformersCompleter(tiny_model),
        model_root=tiny_model,
        model_name="tiny",
        server_version="0.32.0",
    ) as vllm_like:
        assert _judge(vllm_like, tiny_model).describe()["server_version"] == "0.32.0"
