"""Speed levers of the readout: the attention kernel and compiled layers give the same grades.

The tolerance is the one docs/SCORING.md (section 4) states: in float32 the optimised path
(SDPA, compiled decoder layers) equals eager attention without compiling to < 1e-4 in E[g].
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from presentation_dependence.errors import ConfigError
from presentation_dependence.readout import speed
from presentation_dependence.readout.backend import TransformersBackend
from presentation_dependence.readout.prompt import PromptBuilder, get_template
from presentation_dependence.readout.speed import LayerCompiler, decoder_layers, resolve_compile
from presentation_dependence.rerankers.grade import GradeRerankerOptions
from tests.readout.conftest import QUERY
from tests.readout.conftest import TEXTS as ALL_TEXTS

REPO = Path(__file__).resolve().parents[2]
FLOAT32_TOLERANCE = 1e-4  # docs/SCORING.md, section 4
TEXTS = ALL_TEXTS[:4]


@pytest.fixture(autouse=True)
def one_thread() -> Any:
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _prompts(backend: TransformersBackend) -> tuple[list[Any], tuple[int, ...]]:
    b = PromptBuilder(backend.tokenizer, get_template("pathc_grade_v1"), ("0", "1", "2", "3"))
    built = [b.build(QUERY, TEXTS), b.build("flea", TEXTS[::-1] * 3), b.build(QUERY, TEXTS[:1])]
    return built, b.grade_token_ids


def _expected(probs: list[np.ndarray]) -> np.ndarray:
    return np.concatenate([p @ np.arange(4.0) for p in probs])


needs_compiler = pytest.mark.skipif(
    speed.cxx_compiler() is None, reason="torch.compile on CPU needs a C++ compiler"
)


@needs_compiler
def test_optimised_path_equals_eager_attention_in_float32(tiny_model: str) -> None:
    eager = TransformersBackend.load(
        tiny_model, dtype="float32", device="cpu", attn_implementation="eager"
    )
    fast = TransformersBackend.load(tiny_model, dtype="float32", device="cpu")
    assert (eager.attn_implementation, fast.attn_implementation) == ("eager", "sdpa")
    built, ids = _prompts(fast)
    ref, _ = eager.grade_probs(built, ids, one_at_a_time=True)
    opt, _ = fast.grade_probs(built, ids, one_at_a_time=True, compile=True)
    plain, _ = fast.grade_probs(built, ids, one_at_a_time=True)
    for got in (opt, plain):
        diff = np.abs(_expected(got) - _expected(ref)).max()
        assert diff < FLOAT32_TOLERANCE, diff
    assert fast.compiler.enabled is False  # switched on for that call only
    assert all(layer._compiled_call_impl is None for layer in fast.compiler.layers)


@needs_compiler
def test_compiled_one_at_a_time_is_bit_identical_across_reruns(tiny_model: str) -> None:
    backend = TransformersBackend.load(tiny_model, dtype="bfloat16", device="cpu")
    built, ids = _prompts(backend)
    a, _ = backend.grade_probs(built, ids, one_at_a_time=True, compile=True)
    b, _ = backend.grade_probs(built[::-1], ids, one_at_a_time=True, compile=True)
    for x, y in zip(a, b[::-1], strict=True):
        assert np.array_equal(x, y)


@needs_compiler
def test_compiled_scores_do_not_depend_on_what_the_process_compiled_before(
    tiny_model: str, tmp_path: Path
) -> None:
    # Two fresh processes: one scores the prompts first thing, in order; the other first runs
    # a batched pass and a grad-mode forward, then scores them in reverse. The same bits: a
    # resumed run equals an uninterrupted one with compiled layers (docs/SCORING.md, section 4).
    env = {**os.environ, "PYTHONPATH": str(REPO / "tools"), "OMP_NUM_THREADS": "1"}
    runs = {"plain": "", "history": "batch,grad,reverse"}
    for name, history in runs.items():
        cmd = [sys.executable, "-m", "presdep_tools.testing.compile_history", tiny_model]
        subprocess.run([*cmd, str(tmp_path / f"{name}.npz"), history], env=env, check=True)
    a, b = (np.load(tmp_path / f"{name}.npz") for name in runs)
    assert sorted(a.files) == sorted(b.files) == ["cut128", "cut64", "four", "one"]
    for key in a.files:
        assert np.array_equal(a[key], b[key]), key


def test_decoder_layers_are_found_plain_and_through_peft(tiny_model: str) -> None:
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_model)
    layers = decoder_layers(model)
    assert len(layers) == model.config.num_hidden_layers == 2
    assert decoder_layers(torch.nn.Linear(2, 2)) == []
    peft = pytest.importorskip("peft")
    wrapped = peft.get_peft_model(
        model, peft.LoraConfig(r=2, target_modules=["q_proj"], task_type="CAUSAL_LM")
    )
    assert [id(x) for x in decoder_layers(wrapped)] == [id(x) for x in layers]


def test_layer_compiler_switches_on_and_back(tiny_model: str) -> None:
    from transformers import AutoModelForCausalLM

    comp = LayerCompiler(AutoModelForCausalLM.from_pretrained(tiny_model))
    with comp.active(True):
        assert comp.enabled and all(x._compiled_call_impl is not None for x in comp.layers)
    assert not comp.enabled and all(x._compiled_call_impl is None for x in comp.layers)
    comp.enable()
    with comp.active(False):
        assert all(x._compiled_call_impl is None for x in comp.layers)
    assert comp.enabled and all(x._compiled_call_impl is not None for x in comp.layers)


def test_resolve_compile(monkeypatch: pytest.MonkeyPatch) -> None:
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    bf16, f32 = torch.bfloat16, torch.float32
    assert resolve_compile("auto", cuda, bf16) is False  # not measured on GPU yet
    assert resolve_compile(False, cpu, bf16) is False and resolve_compile(True, cuda) is True
    monkeypatch.setattr(speed, "cxx_compiler", lambda: "/usr/bin/g++")
    # auto: where compiled layers were measured to pay (bfloat16 on CPU), not in float32
    assert resolve_compile("auto", cpu, bf16) is True
    assert resolve_compile("auto", cpu, f32) is False and resolve_compile("auto", cpu) is False
    assert resolve_compile(True, cpu, f32) is True
    monkeypatch.setattr(speed, "cxx_compiler", lambda: None)
    assert resolve_compile("auto", cpu, bf16) is False
    with pytest.raises(ConfigError, match="C\\+\\+ compiler"):
        resolve_compile(True, cpu)
    with pytest.raises(ConfigError, match="compile must be"):
        resolve_compile("yes", cpu)  # type: ignore[arg-type]


def test_options_validate_the_speed_switches(tiny_model: str) -> None:
    assert GradeRerankerOptions().attn_implementation == "sdpa"
    # auto: compiled in bfloat16 on CPU (where it pays), eager in float32 (test_resolve_compile)
    assert GradeRerankerOptions().compile == "auto"
    with pytest.raises(ConfigError, match="attn_implementation"):
        GradeRerankerOptions(attn_implementation="flash")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="compile must be"):
        GradeRerankerOptions(compile=1)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="attn_implementation"):
        TransformersBackend.load(tiny_model, device="cpu", attn_implementation="flash")
