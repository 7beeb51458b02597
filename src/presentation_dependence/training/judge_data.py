"""Training examples of a verdict readout judge: items -> placements -> readout prompts.

Each example is one judge item (a prompt, N responses, exactly one correct) with V *views*:
placements, slot j of view v showing response ``views[v, j]``. They are drawn like the
students' views (:func:`~.collate.draw_views`: ``default_rng([seed, crc32("views"),
crc32(item id), epoch])``, distinct where N! allows), fresh every epoch, so every time an item
is trained on, it is shown in new seeded placements; they depend on the item and the epoch only.

:class:`VerdictCollator` renders every view with the judge's own prompt function
(:func:`~presentation_dependence.judge.judges.readout.readout_prompt`: the same template, chat
template, response cut, skeleton and single-token check as the judge that serves it) and
left-pads the batch like the inference backend (``position_ids = cumsum(mask) − 1``). Items of
different N (pairs and four-way) share a batch: slots beyond an item's N are masked. Identical
views of an item share one prompt row, so their consistency term is exactly 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from presentation_dependence.judge.items.records import JudgeRequest, ResponseItem
from presentation_dependence.judge.judges.generative import JUDGE_TEMPLATES, user_text
from presentation_dependence.judge.judges.readout import ReadoutJudgeOptions, readout_prompt
from presentation_dependence.training.collate import (
    ViewsDataset,
    distinct_views,
    draw_views,
    left_pad,
)

__all__ = ["JudgeDataset", "JudgeExample", "VerdictCollator"]


@dataclass(frozen=True)
class JudgeExample:
    """One item and its views (V, N)."""

    item: ResponseItem
    views: np.ndarray


class JudgeDataset(ViewsDataset[JudgeExample]):
    """Judge items as training examples (map-style; views depend on the epoch)."""

    def __init__(self, items: Sequence[ResponseItem], *, views: int, seed: int = 0) -> None:
        super().__init__(views=views, seed=seed)
        self.items = list(items)
        for it in self.items:
            it.correct_index  # noqa: B018  (exactly one correct response)

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> JudgeExample:
        it = self.items[index]
        views = draw_views(
            len(it.responses), self.views, seed=self.seed, key=it.item_id, epoch=self.epoch
        )
        return JudgeExample(item=it, views=views)


class VerdictCollator:
    """Tokenise every view of every example into a left-padded batch.

    Returns tensors: ``input_ids``, ``attention_mask``, ``position_ids`` (R, L) for the R
    distinct (item, view) prompts; ``readout_positions`` (R,): where the verdict is read;
    ``label_ids`` (R, N): the token of slot j's letter (0 on padding); ``slot_responses``
    (R, N): the response slot j shows (N on padding); ``slot_mask`` (R, N); ``view_rows``
    (Q, V); ``correct`` (Q,): the correct response; ``response_mask`` (Q, N).
    """

    def __init__(
        self,
        tokenizer: Any,
        where: str,
        options: ReadoutJudgeOptions,
        pad_token_id: int,
        max_context: int | None = None,
    ) -> None:
        self.tokenizer = tokenizer
        self.where = where
        self.options = options
        self.template = JUDGE_TEMPLATES[options.template]
        self.pad_token_id = int(pad_token_id)
        self.max_context = max_context

    def prompt(self, req: JudgeRequest) -> tuple[tuple[int, ...], int, tuple[int, ...]]:
        """(input ids up to and including the skeleton, the readout index, the label ids)."""
        text = user_text(self.template, req, self.options.max_response_chars)
        built, labels = readout_prompt(
            self.tokenizer, self.where, text, req, self.options, self.max_context
        )
        pos = built.grade_positions[0]
        return tuple(built.input_ids[:pos]), pos - 1, labels

    def __call__(self, examples: Sequence[JudgeExample]) -> dict[str, torch.Tensor]:
        distinct, view_rows = distinct_views([ex.views for ex in examples])
        n_max = max(len(ex.item.responses) for ex in examples)
        rows = [(*self.prompt(JudgeRequest(examples[q].item, view)), view) for q, view in distinct]
        return {**self._pad(rows, n_max), "view_rows": view_rows, **self._targets(examples, n_max)}

    def _pad(
        self, rows: Sequence[tuple[tuple[int, ...], int, tuple[int, ...], tuple[int, ...]]], n: int
    ) -> dict[str, torch.Tensor]:
        padded, pads = left_pad([tokens for tokens, _, _, _ in rows], self.pad_token_id)
        r = len(rows)
        readout = torch.zeros(r, dtype=torch.long)
        labels = torch.zeros((r, n), dtype=torch.long)
        slot_resp = torch.full((r, n), n, dtype=torch.long)
        slot_mask = torch.zeros((r, n), dtype=torch.bool)
        for b, ((_, pos, label_ids, view), pad) in enumerate(zip(rows, pads, strict=True)):
            readout[b] = pad + pos
            k = len(view)
            labels[b, :k] = torch.tensor(label_ids, dtype=torch.long)
            slot_resp[b, :k] = torch.tensor(view, dtype=torch.long)
            slot_mask[b, :k] = True
        return {
            **padded,
            "readout_positions": readout,
            "label_ids": labels,
            "slot_responses": slot_resp,
            "slot_mask": slot_mask,
        }

    @staticmethod
    def _targets(examples: Sequence[JudgeExample], n: int) -> dict[str, torch.Tensor]:
        correct = torch.tensor([ex.item.correct_index for ex in examples], dtype=torch.long)
        resp_mask = torch.zeros((len(examples), n), dtype=torch.bool)
        for q, ex in enumerate(examples):
            resp_mask[q, : len(ex.item.responses)] = True
        return {"correct": correct, "response_mask": resp_mask}
