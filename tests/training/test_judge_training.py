"""Trained verdict readout judges (issue 37) on the tiny random model; peft needed.

The consistency term compares verdict distributions realigned to the responses (a hand-computed
example); the training readout is the serving judge's, number for number; a judge trained on a
synthetic set whose correct answer is always the same content learns it and is served by the
ordinary readout judge through ``adapter_path``; a SIGKILLed run resumes to the uninterrupted
run's adapter.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch

pytest.importorskip("peft")

from safetensors.torch import load_file

from presentation_dependence.errors import ConfigError
from presentation_dependence.judge.items.records import JudgeRequest, ResponseItem
from presentation_dependence.judge.judges import generation
from presentation_dependence.judge.judges.readout import ReadoutJudge, ReadoutJudgeOptions
from presentation_dependence.judge.placement import make_requests
from presentation_dependence.readout.adapter import adapter_sha256
from presentation_dependence.training import judge_heldout
from presentation_dependence.training.judge_config import judge_training_config_from_raw
from presentation_dependence.training.judge_data import JudgeDataset, VerdictCollator
from presentation_dependence.training.judge_model import load_judge_model, verdict_readout
from presentation_dependence.training.judge_trainer import train_judge
from presentation_dependence.training.loss import verdict_loss
from presentation_dependence.training.resume import CHECKPOINTS, train_record
from tests.training.conftest import ALL_LINEAR

ROOT = Path(__file__).resolve().parents[2]
KILL = Path(__file__).with_name("kill_judge_run.py")
GOOD = "The sky is blue."


def synthetic_items(n: int = 8) -> list[ResponseItem]:
    """Pairs and four-way items whose correct response is always :data:`GOOD`."""
    out = []
    for i in range(n):
        k = 2 if i % 2 else 4
        wrong = [f"Number {10 * i + j} is green." for j in range(k - 1)]
        responses = (GOOD, *wrong) if i % 3 else (*wrong, GOOD)
        out.append(
            ResponseItem(
                item_id=f"syn{i:02d}",
                prompt=f"Question {i}: what colour is the sky?",
                responses=responses,
                labels=tuple(r == GOOD for r in responses),
                source="synthetic",
            )
        )
    return out


def judge_block(tiny: str) -> dict[str, Any]:
    return {"judge_class": "readout", "model_name": tiny, "device": "cpu", "dtype": "float32"}


def raw_cfg(tiny: str, out: Path, variant: str = "oc_sft", **train: Any) -> dict[str, Any]:
    return {
        "variant": variant,
        "output_dir": str(out),
        "judge": judge_block(tiny),
        "views": 2,
        "lambda_": 1.0 if variant == "oc_sft" else 0.0,
        "train": {"learning_rate": 1e-2, "logging_steps": 1, "save_steps": 2, **train},
        "lora": {"r": 4, "alpha": 8},
    }


class FakeModel:
    """Returns the given logits whatever the input (the readout picks positions and letters)."""

    def __init__(self, logits: torch.Tensor) -> None:
        self.logits = logits

    def __call__(self, **kwargs: Any) -> Any:
        return SimpleNamespace(logits=self.logits)


def test_consistency_realigns_slots_to_responses_hand_computed() -> None:
    # One pair, two placements: view 0 shows (r0, r1), view 1 shows (r1, r0). Slot letters are
    # tokens 1 (A) and 2 (B). View 0: P(A) = 0.8 -> P(r0) = 0.8. View 1: P(A) = 0.3 names r1,
    # so P(r0) = P(B) = 0.7. Realigned: P_0 = (0.8, 0.2), P_1 = (0.7, 0.3).
    logits = torch.full((2, 3, 4), -30.0)  # read at position 2 of each row
    logits[0, 2, 1], logits[0, 2, 2] = math.log(0.8), math.log(0.2)
    logits[1, 2, 1], logits[1, 2, 2] = math.log(0.3), math.log(0.7)
    batch = {
        "input_ids": torch.zeros((2, 3), dtype=torch.long),
        "attention_mask": torch.ones((2, 3), dtype=torch.long),
        "position_ids": torch.arange(3).expand(2, 3),
        "readout_positions": torch.tensor([2, 2]),
        "label_ids": torch.tensor([[1, 2], [1, 2]]),
        "slot_responses": torch.tensor([[0, 1], [1, 0]]),
        "slot_mask": torch.ones((2, 2), dtype=torch.bool),
        "view_rows": torch.tensor([[0, 1]]),
    }
    lp = verdict_readout(FakeModel(logits), batch, use_logits_to_keep=False)
    assert torch.allclose(lp.exp(), torch.tensor([[[0.8, 0.2], [0.7, 0.3]]]), atol=1e-6)
    mask = torch.ones((1, 2), dtype=torch.bool)
    sq = verdict_loss(lp, torch.tensor([0]), mask, 1.0)
    # fit: mean of −log 0.8 and −log 0.7; squared: mean_d (ΔP)² = (0.1² + 0.1²) / 2 = 0.01
    assert sq.fit.item() == pytest.approx(-(math.log(0.8) + math.log(0.7)) / 2, abs=1e-6)
    assert sq.consistency.item() == pytest.approx(0.01, abs=1e-6)
    assert sq.total.item() == pytest.approx(sq.fit.item() + 0.01, abs=1e-6)
    kl = verdict_loss(lp, torch.tensor([0]), mask, 1.0, consistency_kind="sym_kl")
    want = 0.1 * math.log(0.8 / 0.7) + (-0.1) * math.log(0.2 / 0.3)
    assert kl.consistency.item() == pytest.approx(want, abs=1e-6)
    # Compared slot by slot (the wrong alignment) the term would be (0.5² + 0.5²) / 2 = 0.25.
    assert verdict_loss(lp, torch.tensor([1]), mask).consistency.item() == pytest.approx(0.01)


def test_disagreement_is_the_chance_two_drawn_verdicts_differ() -> None:
    # The realigned pair of the test above: P_0 = (0.8, 0.2), P_1 = (0.7, 0.3).
    lp = torch.log(torch.tensor([[[0.8, 0.2], [0.7, 0.3]]])).requires_grad_(True)
    mask = torch.ones((1, 2), dtype=torch.bool)
    parts = verdict_loss(lp, torch.tensor([0]), mask, 1.0, consistency_kind="disagreement")
    # 1 − (0.8·0.7 + 0.2·0.3) = 1 − 0.62 = 0.38
    assert parts.consistency.item() == pytest.approx(0.38, abs=1e-6)
    # = ½ Σ_d ΔP² + ½ Gini(P_0) + ½ Gini(P_1) = ½·0.02 + ½·0.32 + ½·0.42
    assert parts.consistency.item() == pytest.approx(0.01 + 0.16 + 0.21, abs=1e-6)
    parts.consistency.backward()
    # d/d log P_v(d) of −Σ P_0 P_1 is −P_0(d) P_1(d) in both views: each view gets a gradient
    want = -torch.tensor([[0.56, 0.06], [0.56, 0.06]])
    assert lp.grad is not None
    assert torch.allclose(lp.grad[0], want, atol=1e-6)


def test_disagreement_does_not_vanish_at_the_uniform_distribution() -> None:
    uniform = torch.log(torch.full((1, 2, 4), 0.25))
    mask = torch.ones((1, 4), dtype=torch.bool)
    for kind, want in (("squared", 0.0), ("sym_kl", 0.0), ("disagreement", 0.75)):
        parts = verdict_loss(uniform, torch.tensor([0]), mask, 1.0, consistency_kind=kind)
        assert parts.consistency.item() == pytest.approx(want, abs=1e-6), kind
    # a certain verdict shared by both views is the term's only zero
    sure = torch.log(torch.tensor([[[1.0, 1e-12], [1.0, 1e-12]]]))
    two = torch.ones((1, 2), dtype=torch.bool)
    parts = verdict_loss(sure, torch.tensor([0]), two, 1.0, consistency_kind="disagreement")
    assert parts.consistency.item() == pytest.approx(0.0, abs=1e-6)


def test_disagreement_ignores_padding_responses() -> None:
    # padding columns carry P = 1 here: counted, they would cancel the pair's disagreement
    lp = torch.log(torch.tensor([[[0.6, 0.4, 1.0, 1.0], [0.5, 0.5, 1.0, 1.0]]]))
    mask = torch.tensor([[True, True, False, False]])
    parts = verdict_loss(lp, torch.tensor([0]), mask, 1.0, consistency_kind="disagreement")
    assert parts.consistency.item() == pytest.approx(1 - (0.3 + 0.2), abs=1e-6)


def test_padding_responses_contribute_nothing() -> None:
    # A pair and a four-way item share a batch: the pair's columns 2, 3 are padding.
    lp = torch.log(torch.tensor([[[0.6, 0.4, 1.0, 1.0], [0.5, 0.5, 1.0, 1.0]]]))
    lp = torch.cat([lp, torch.log(torch.full((1, 2, 4), 0.25))])
    mask = torch.tensor([[True, True, False, False], [True, True, True, True]])
    parts = verdict_loss(lp, torch.tensor([0, 2]), mask, 1.0)
    # the pair: (0.1² + 0.1²) / 2 = 0.01; the four-way item: 0; mean over items 0.005
    assert parts.consistency.item() == pytest.approx(0.005, abs=1e-6)


def test_training_readout_is_the_serving_judge(tiny_model: str) -> None:
    cfg = judge_training_config_from_raw(raw_cfg(tiny_model, Path("unused")), "t")
    jm = load_judge_model(cfg)
    items = synthetic_items(4)
    collate = VerdictCollator(
        jm.tokenizer, jm.resolved.path, cfg.judge_options, jm.pad_token_id, jm.max_context
    )
    ds = JudgeDataset(items, views=2, seed=0)
    batch = collate([ds[i] for i in range(len(ds))])
    with torch.no_grad():  # a fresh LoRA adapter (B = 0) is the base model
        lp = verdict_readout(jm.model.eval(), batch, use_logits_to_keep=jm.use_logits_to_keep)
    judge = ReadoutJudge(ReadoutJudgeOptions(model_name=tiny_model, device="cpu", dtype="float32"))
    for q, ex in enumerate(ds[i] for i in range(len(ds))):
        for v, view in enumerate(ex.views):
            req = JudgeRequest(ex.item, tuple(int(i) for i in view))
            (rec,) = judge.judge([req])
            got = lp[q, v, : len(ex.item.responses)].exp().numpy()
            assert np.allclose(got, rec.extra["response_probs"], atol=1e-5)


def accuracy(tiny: str, items: list[ResponseItem], adapter: Path | None) -> float:
    opts = ReadoutJudgeOptions(
        model_name=tiny,
        device="cpu",
        dtype="float32",
        adapter_path=None if adapter is None else str(adapter),
    )
    records = ReadoutJudge(opts).judge(make_requests(items, "full", 0))
    return float(np.mean([r.correct for r in records]))


@pytest.mark.slow
def test_a_judge_learns_labels_that_follow_one_content(tiny_model: str, tmp_path: Path) -> None:
    items = synthetic_items(8)
    out = tmp_path / "learn"
    raw = raw_cfg(tiny_model, out, "placement_aug", max_steps=80, save_steps=100)
    raw["lora"] = {
        "r": 8,
        "alpha": 16,
        "target_modules": list(ALL_LINEAR),
    }
    cfg = judge_training_config_from_raw(raw, "learn")
    before = accuracy(tiny_model, items, None)
    outcome = train_judge(cfg, items=items)
    assert outcome.global_step == 80 and (out / "adapter").is_dir()
    served = json.loads(json.dumps(__import__("yaml").safe_load((out / "judge.yaml").read_text())))
    assert served["adapter_path"] == str(out / "adapter") and served["judge_class"] == "readout"
    after = accuracy(tiny_model, items, out / "adapter")
    assert after >= 0.85 and after > before + 0.4, (before, after)  # measured 0.27 -> 0.90
    # the judge's identity names the adapter: a gate cache never mixes it with the base's
    opts = ReadoutJudgeOptions(
        model_name=tiny_model, device="cpu", adapter_path=str(out / "adapter")
    )
    assert "+lora:" in ReadoutJudge(opts).identity().model_snapshot


@pytest.mark.slow
def test_sigkill_then_rerun_gives_the_uninterrupted_judge(tiny_model: str, tmp_path: Path) -> None:
    items = synthetic_items(3)
    ref_out, out = tmp_path / "ref", tmp_path / "killed"
    ref = train_judge(
        judge_training_config_from_raw(raw_cfg(tiny_model, ref_out, epochs=2), "jr"), items=items
    )
    assert ref.global_step == 6
    raw = raw_cfg(tiny_model, out, epochs=2)
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tools")]),
    }
    proc = subprocess.run(
        [sys.executable, str(KILL), json.dumps(raw), "5", "3"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == -9, proc.stderr[-3000:]
    assert not (out / "adapter").exists() and (out / CHECKPOINTS / "checkpoint-4").is_dir()
    again = train_judge(judge_training_config_from_raw(raw, "jr"), items=items)
    assert again.resumed_from_step == 4 and again.global_step == 6
    a = load_file(str(ref.adapter_dir / "adapter_model.safetensors"))
    b = load_file(str(again.adapter_dir / "adapter_model.safetensors"))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    # a finished folder is a no-op
    assert train_judge(judge_training_config_from_raw(raw, "jr"), items=items).skipped


@pytest.mark.parametrize(
    ("consistency", "criterion"),
    [("squared", "accuracy"), ("disagreement", "consistent_accuracy")],
)
def test_early_stopping_judges_each_checkpoint_on_held_out_items(
    tiny_model: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    consistency: str,
    criterion: str,
) -> None:
    """Checkpoint selection for trained judges: every checkpoint judges the held-out items under
    every placement; with min_delta 5 nothing improves on the first, so patience 1 stops at the
    second and the first checkpoint's adapter is the judge saved. The same with the
    disagreement term and the share right in every placement as the rule."""
    held = synthetic_items(3)
    monkeypatch.setattr(judge_heldout, "heldout_items", lambda cfg: held)
    out = tmp_path / "stop"
    raw = raw_cfg(tiny_model, out, max_steps=4, save_steps=1, keep_snapshots=True)
    raw["consistency"] = consistency
    raw["early_stopping"] = {
        "patience": 1,
        "min_delta": 5.0,
        "placements": "full",
        "criterion": criterion,
    }
    cfg = judge_training_config_from_raw(raw, "stop")
    outcome = train_judge(cfg, items=synthetic_items(4))
    assert outcome.global_step == 2
    record = train_record(out)["early_stopping"]
    assert (record["criterion"], record["best_step"], record["stopped_at"]) == (criterion, 1, 2)
    assert record["heldout_items"] == 3 and record["placements"] == "full"
    point = json.loads((out / "curve" / "step-000001.json").read_text())["point"]
    # 3 items (four-way, pair, four-way) x every placement: 24 + 2 + 24 records
    assert point["records"] == 50 and point["num_items"] == 3
    assert 0 <= point["accuracy"] <= 1 and 0 <= point["flip_share"] <= 1
    assert 0 <= point["consistency"] <= 1 and 0 <= point["median_margin"] <= 1  # the readout's P
    snap = out / "snapshots" / "step-000001"
    # each judged checkpoint's base copy is released, not held for the rest of the run
    shas = {adapter_sha256(p) for p in (out / "snapshots").iterdir()}
    assert not [k for k in generation._GENERATORS if k[-1] in shas]
    opts = ReadoutJudgeOptions(
        model_name=tiny_model, device="cpu", dtype="float32", adapter_path=str(snap)
    )
    records = ReadoutJudge(opts).judge(make_requests(held, "full", 0))
    by_item = [np.mean([r.correct for r in records if r.item_id == it.item_id]) for it in held]
    assert point["accuracy"] == pytest.approx(np.mean(by_item))  # each item weighs the same
    assert point["consistent_accuracy"] == pytest.approx(np.mean([m == 1.0 for m in by_item]))
    saved = (out / "adapter" / "adapter_model.safetensors").read_bytes()
    assert saved == (out / "snapshots" / "step-000001" / "adapter_model.safetensors").read_bytes()
    with pytest.raises(ConfigError, match="keep_snapshots"):
        judge_training_config_from_raw({**raw, "train": {"keep_snapshots": False}}, "x")
