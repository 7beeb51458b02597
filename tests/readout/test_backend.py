"""The transformers backend: left padding, batching, logits_to_keep, dtype resolution."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from presentation_dependence.errors import ConfigError
from presentation_dependence.readout import speed
from presentation_dependence.readout.backend import (
    TransformersBackend,
    resolve_device,
    resolve_dtype,
)
from presentation_dependence.readout.prompt import BuiltPrompt, PromptBuilder, get_template
from presentation_dependence.readout.speed import cpu_default_dtype
from presentation_dependence.training.model import TRAINING_CPU_DTYPE
from tests.readout.conftest import QUERY, TEXTS

logger = logging.getLogger(__name__)


@pytest.fixture(scope="module")
def backend(tiny_model: str) -> TransformersBackend:
    return TransformersBackend.load(tiny_model, dtype="float32", device="cpu")


@pytest.fixture(scope="module")
def prompts(backend: TransformersBackend) -> tuple[list[BuiltPrompt], tuple[int, ...]]:
    b = PromptBuilder(backend.tokenizer, get_template("pathc_grade_v1"), ("0", "1", "2", "3"))
    built = [
        b.build(QUERY, TEXTS[:1]),  # short
        b.build(QUERY, TEXTS),  # long
        b.build(QUERY, TEXTS[::-1] * 3),  # longer
        b.build("flea", TEXTS[2:4]),
    ]
    assert len({len(p) for p in built}) == len(built)
    return built, b.grade_token_ids


def test_probabilities_are_distributions(backend: TransformersBackend, prompts: Any) -> None:
    built, ids = prompts
    probs, stats = backend.grade_probs(built, ids)
    assert [p.shape for p in probs] == [(len(b.grade_positions), 4) for b in built]
    for p in probs:
        assert np.allclose(p.sum(axis=1), 1.0, atol=1e-6) and (p >= 0).all()
    assert stats.forward_passes == len(built)
    assert stats.prompt_tokens == sum(len(b) for b in built)


def test_batched_matches_one_at_a_time(backend: TransformersBackend, prompts: Any) -> None:
    built, ids = prompts
    single, s1 = backend.grade_probs(built, ids, one_at_a_time=True, batch_size=4)
    batched, s4 = backend.grade_probs(built, ids, batch_size=4)
    assert s1.forward_passes == 4 and s4.forward_passes == 1
    assert s4.padded_tokens > s4.prompt_tokens  # the batch was padded
    diff = max(float(np.abs(a - b).max()) for a, b in zip(single, batched, strict=True))
    grades = np.arange(4)
    score_diff = max(
        float(np.abs(a @ grades - b @ grades).max()) for a, b in zip(single, batched, strict=True)
    )
    logger.info("batched vs one-at-a-time: max |dP| %.3g, max |dE[g]| %.3g", diff, score_diff)
    assert diff < 1e-4 and score_diff < 1e-4


def test_left_padding_short_and_long_together(backend: TransformersBackend, prompts: Any) -> None:
    built, ids = prompts
    short, long = built[0], built[2]
    alone = [backend.grade_probs([p], ids)[0][0] for p in (short, long)]
    for pair in ([short, long], [long, short]):
        together, stats = backend.grade_probs(pair, ids, batch_size=2)
        assert stats.forward_passes == 1
        by_len = {len(p): t for p, t in zip(pair, together, strict=True)}
        np.testing.assert_allclose(by_len[len(short)], alone[0], atol=1e-5)
        np.testing.assert_allclose(by_len[len(long)], alone[1], atol=1e-5)


def test_logits_to_keep_matches_full_logits(backend: TransformersBackend, prompts: Any) -> None:
    built, ids = prompts
    assert backend.supports_logits_to_keep
    kept, _ = backend.grade_probs(built, ids, batch_size=2)
    backend.supports_logits_to_keep = False
    try:
        full, _ = backend.grade_probs(built, ids, batch_size=2)
    finally:
        backend.supports_logits_to_keep = True
    for a, b in zip(kept, full, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-6)


def test_rerun_is_bitwise_identical(backend: TransformersBackend, prompts: Any) -> None:
    built, ids = prompts
    a, _ = backend.grade_probs(built, ids, one_at_a_time=True)
    b, _ = backend.grade_probs(built, ids, one_at_a_time=True)
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


def test_readout_is_at_the_position_before_the_grade(backend: TransformersBackend) -> None:
    b = PromptBuilder(backend.tokenizer, get_template("pathc_grade_v1"), ("0", "1", "2", "3"))
    p = b.build(QUERY, TEXTS[:2])
    probs, _ = backend.grade_probs([p], b.grade_token_ids)
    with torch.inference_mode():
        logits = backend.model(torch.tensor([p.input_ids])).logits[0]
    ids = list(b.grade_token_ids)
    for i, pos in enumerate(p.grade_positions):
        expect = logits[pos - 1, ids].softmax(-1).double().numpy()
        np.testing.assert_allclose(probs[0][i], expect, atol=1e-6)


def test_dtype_and_device_resolution() -> None:
    cpu = torch.device("cpu")
    assert resolve_device("cpu") == cpu
    assert resolve_dtype("auto", cpu) == getattr(torch, cpu_default_dtype())
    assert resolve_dtype("auto", torch.device("cuda")) == torch.bfloat16
    assert resolve_dtype("float16", cpu) == torch.float16
    with pytest.raises(ConfigError, match="dtype"):
        resolve_dtype("fp8", cpu)
    with pytest.raises(ConfigError, match="device"):
        resolve_device("tpu")


@pytest.mark.parametrize(
    ("avx512_bf16", "amx", "expect"),
    [(True, False, "bfloat16"), (False, True, "bfloat16"), (False, False, "float32")],
)
def test_auto_dtype_on_cpu_follows_native_bfloat16(
    monkeypatch: pytest.MonkeyPatch, avx512_bf16: bool, amx: bool, expect: str
) -> None:
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: avx512_bf16, raising=False)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: amx, raising=False)
    assert cpu_default_dtype() == expect
    assert resolve_dtype("auto", torch.device("cpu")) == getattr(torch, expect)
    assert resolve_dtype("bfloat16", torch.device("cpu")) == torch.bfloat16  # named: kept
    # training's auto is the recipes' bfloat16 on every CPU (resumable with the same arithmetic)
    cpu_auto = TRAINING_CPU_DTYPE
    assert resolve_dtype("auto", torch.device("cpu"), cpu_auto=cpu_auto) == torch.bfloat16


def test_native_bfloat16_falls_back_to_cpuinfo_flags(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delattr(torch.cpu, "_is_avx512_bf16_supported", raising=False)
    info = tmp_path / "cpuinfo"
    for flags, expect in (("fpu sse avx2 amx_bf16 amx_tile", True), ("fpu avx2 fma", False)):
        info.write_text(f"processor\t: 0\nflags\t\t: {flags}\n", encoding="utf-8")
        assert speed.cpu_has_native_bfloat16(info) is expect
    assert speed.cpu_has_native_bfloat16(tmp_path / "absent") is False
