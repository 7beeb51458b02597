"""The student's speed switches: compiled layers give the eager student's scores and gradients."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from presentation_dependence.readout import speed
from presentation_dependence.rerankers.grade import GradeRerankerOptions

pytest.importorskip("peft")

FLOAT32_TOLERANCE = 1e-4  # docs/SCORING.md, section 4
TEXTS = (
    "The life cycle of a flea can last anywhere from 20 days to an entire year.",
    "Fleas lay eggs on the host; the eggs fall off into the environment.",
    "An unrelated passage about the history of the Roman empire and its roads.",
    "Cats and dogs are the most common hosts of the cat flea.",
)


@pytest.mark.skipif(speed.cxx_compiler() is None, reason="compile on CPU needs a C++ compiler")
def test_compiled_student_matches_the_eager_student(tiny_model: str) -> None:
    from presentation_dependence.training.collate import ReadoutCollator, TrainExample
    from presentation_dependence.training.config import LoraOptions
    from presentation_dependence.training.loss import readout_loss
    from presentation_dependence.training.model import load_student, student_readout

    ex = TrainExample(
        key="q",
        query="how long do fleas live",
        texts=TEXTS,
        labels=np.array([3.0, 2.0, 0.0, 1.0]),
        views=np.array([[0, 1, 2, 3], [3, 1, 0, 2]]),
    )
    out = {}
    for compiled in (False, True):
        opts = GradeRerankerOptions(
            model_name=tiny_model, dtype="float32", device="cpu", chunk_size=4, compile=compiled
        )
        student = load_student(opts, LoraOptions(r=4, alpha=8), seed=0)
        assert student.compiled is compiled and student.describe()["compiled"] is compiled
        assert student.describe()["attn_implementation"] == "sdpa"
        # the LoRA B init is zero: move it off zero (seeded) so gradients reach A too
        torch.manual_seed(1)
        for name, p in student.model.named_parameters():
            if "lora_B" in name:
                torch.nn.init.normal_(p, std=0.1)
        batch = ReadoutCollator(student.builder, student.pad_token_id)([ex])
        student.model.train()
        ro = student_readout(student.model, batch, student.grade_token_ids)
        loss = readout_loss(ro.scores, batch["teacher_scores"], batch["candidate_mask"], 1.0)
        loss.total.backward()
        grads = {
            n: p.grad.detach().clone()
            for n, p in student.model.named_parameters()
            if p.requires_grad and p.grad is not None
        }
        out[compiled] = (ro.scores.detach(), grads)
    (s0, g0), (s1, g1) = out[False], out[True]
    assert float((s0 - s1).abs().max()) < FLOAT32_TOLERANCE
    assert g0.keys() == g1.keys() and len(g0) > 0
    for name in g0:
        scale = float(g0[name].abs().max()) + 1e-6
        assert float((g0[name] - g1[name]).abs().max()) / scale < 1e-3, name
