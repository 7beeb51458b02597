"""A scripted judge with known accuracy and rerun noise, for testing the gate and ``run_noise``.

Per (item, placement) a *latent* verdict is drawn once: correct with probability ``accuracy``,
otherwise a uniformly chosen wrong slot. Each call (each repeat index) then, with probability
``noise``, replaces it by a uniformly random slot, and with probability ``parse_failure`` writes
a judgement without a verdict marker. All draws come from
:func:`~presentation_dependence.seeding.rng_from` seeded by (seed, stream name, item id,
placement[, repeat]); batching is ignored. So a call is correct
with probability ``(1 - parse_failure) * (accuracy * (1 - noise) + noise / N)``, and two calls
of one case disagree only through ``noise`` and ``parse_failure``. The judgement text goes
through the real parser.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from presentation_dependence.errors import ConfigError
from presentation_dependence.fields import checked_options, opt
from presentation_dependence.judge.items.records import JudgeRecord, JudgeRequest, slot_letter
from presentation_dependence.judge.judges.base import (
    JUDGES,
    JudgeIdentity,
    JudgeOptions,
    describe_judge,
)
from presentation_dependence.judge.parser import parser_version, verdict_record
from presentation_dependence.seeding import rng_from

__all__ = ["ScriptedJudge", "ScriptedJudgeOptions"]


@dataclass(frozen=True)
class ScriptedJudgeOptions(JudgeOptions):
    accuracy: float = opt(0.7, "P(latent verdict is correct)")
    noise: float = opt(0.0, "P(a call redraws its verdict at random)")
    parse_failure: float = opt(0.0, "P(a call writes no marker)")
    seed: int = opt(0, "seed of every draw")

    def __post_init__(self) -> None:
        for name in ("accuracy", "noise", "parse_failure"):
            v = getattr(self, name)
            if not 0.0 <= v <= 1.0:
                raise ConfigError(f"{name} must be in [0, 1], got {v}")

    def call_accuracy(self, n: int) -> float:
        """P(one call is correct) for an N-way item."""
        return (1 - self.parse_failure) * (self.accuracy * (1 - self.noise) + self.noise / n)


@JUDGES.register("scripted")
class ScriptedJudge:
    """A fake judge whose per-call accuracy and noise are set by its options."""

    config_cls: ClassVar[type[JudgeOptions]] = ScriptedJudgeOptions

    def __init__(self, options: JudgeOptions | None = None) -> None:
        self.options = checked_options(self, options, ScriptedJudgeOptions)
        self.calls = 0

    def _rng(self, stream: str, req: JudgeRequest, *extra: int) -> np.random.Generator:
        return rng_from(self.options.seed, stream, req.item.item_id, *req.placement, *extra)

    def _one(self, req: JudgeRequest) -> JudgeRecord:
        o = self.options
        latent_rng = self._rng("scripted-latent", req)
        if latent_rng.random() < o.accuracy:
            slot = req.correct_slot
        else:
            wrong = [s for s in range(req.n) if s != req.correct_slot]
            slot = int(wrong[int(latent_rng.integers(len(wrong)))])
        call = self._rng("scripted-call", req, req.repeat)
        if call.random() < o.noise:
            slot = int(call.integers(req.n))
        if call.random() < o.parse_failure:
            text = f"Scripted judgement (repeat {req.repeat}): no verdict."
        else:
            text = f"Scripted judgement (repeat {req.repeat}). Verdict: [[{slot_letter(slot)}]]"
        return verdict_record(req, text, "strict")

    def judge(
        self,
        requests: Sequence[JudgeRequest],
        *,
        batch_size: int | None = None,
        one_at_a_time: bool | None = None,
    ) -> list[JudgeRecord]:
        self.calls += len(requests)
        return [self._one(r) for r in requests]

    def identity(self) -> JudgeIdentity:
        o = self.options
        return JudgeIdentity(
            judge_class="scripted",
            model_snapshot=f"scripted:accuracy={o.accuracy},noise={o.noise},parse_failure={o.parse_failure}",
            prompt_version="scripted:v1",
            parser_version=parser_version("strict"),
            seed=o.seed,
        )

    def describe(self) -> dict[str, Any]:
        return describe_judge("scripted", self.identity(), self.options)
