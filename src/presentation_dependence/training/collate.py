"""Training examples: silver queries -> views -> tokenised readout prompts, padded with slot masks.

Each example is one query with its silver labels and V *views*: permutations of its candidates
(slot j of view v shows candidate ``views[v, j]``). ``view_orders: shuffle`` draws them from
``default_rng([seed, crc32("views"), crc32(source/qid), epoch])``, distinct from each other where
the list allows it, fresh every epoch (:meth:`SilverDataset.set_epoch`, called by the trainer);
they depend on the item and the epoch only, never on the process count or the batch. ``teacher``
makes view 1 the silver's first teacher order; ``balanced`` (DebiasFirst) takes V cyclic shifts
of one seeded permutation (training/debias.py).

:class:`ReadoutCollator` renders every view with the reranker's :class:`PromptBuilder` (same
template, cleaning, truncation and slot rule as serving, docs/SCORING.md) and left-pads the batch
like the inference backend (``position_ids = cumsum(mask) − 1``), so a prompt is scored the same
way in training and at serving. A query's identical views share one prompt row (``view_rows``
maps view v of query q to its row), so two views that are the same presentation get the very
same scores and the consistency term between them is exactly 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import torch

from presentation_dependence.errors import ConfigError
from presentation_dependence.readout.prompt import PromptBuilder
from presentation_dependence.seeding import rng_from
from presentation_dependence.training.debias import balanced_views
from presentation_dependence.training.silver import SilverQuery

__all__ = [
    "ReadoutCollator",
    "SilverDataset",
    "TrainExample",
    "ViewsDataset",
    "distinct_views",
    "draw_views",
    "grade_token_ids",
    "left_pad",
]

E = TypeVar("E")


@dataclass(frozen=True)
class TrainExample:
    """One query, its candidate texts, its labels (n,) and its views (V, n); ``raw_labels``
    (n,): the teacher's scores before calibration (a ranking term's ``rank_target: raw``)."""

    key: str
    query: str
    texts: tuple[str, ...]
    labels: np.ndarray
    views: np.ndarray
    raw_labels: np.ndarray | None = None


def draw_views(
    n: int,
    num_views: int,
    *,
    seed: int,
    key: str,
    epoch: int,
    teacher_order: Sequence[int] | None = None,
) -> np.ndarray:
    """``num_views`` permutations of ``n`` candidates; distinct while n! allows it.

    With ``teacher_order`` the first view is that order and the others are drawn.
    """
    rng = rng_from(seed, "views", key, epoch)
    views: list[list[int]] = [] if teacher_order is None else [list(teacher_order)]
    distinct = math.factorial(n)
    while len(views) < num_views:
        cand = [int(i) for i in rng.permutation(n)]
        if cand not in views or len(views) >= distinct:
            views.append(cand)
    return np.asarray(views, dtype=np.int64)


class ViewsDataset(torch.utils.data.Dataset[E]):
    """Training examples, each shown in ``views`` seeded views that depend on the epoch (map-style;
    :class:`~.readout_trainer.EpochViews` calls :meth:`set_epoch`): a student's
    (:class:`SilverDataset`) or a trained judge's (:class:`~.judge_data.JudgeDataset`)."""

    def __init__(self, *, views: int, seed: int) -> None:
        self.views = views
        self.seed = seed
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)


class SilverDataset(ViewsDataset[TrainExample]):
    """Silver queries as training examples (map-style; views depend on the epoch)."""

    def __init__(
        self,
        queries: Sequence[SilverQuery],
        *,
        teacher_orders: int,
        views: int,
        view_orders: str = "shuffle",
        seed: int = 0,
        max_candidates: int | None = None,
    ) -> None:
        super().__init__(views=views, seed=seed)
        self.queries = list(queries)
        self.teacher_orders = teacher_orders
        self.view_orders = view_orders
        for q in self.queries:
            q.labels(teacher_orders)  # raises when the silver has too few orders
            if max_candidates is not None and len(q.candidates) > max_candidates:
                raise ConfigError(
                    f"silver query {q.key} has {len(q.candidates)} candidates, more than the "
                    f"student's chunk_size {max_candidates}: a view is one prompt. Fix: lower "
                    "the data block's top_k or raise student.chunk_size"
                )
            if not q.candidates:
                raise ConfigError(f"silver query {q.key} has no candidates")

    def __len__(self) -> int:
        return len(self.queries)

    def __getitem__(self, index: int) -> TrainExample:
        q = self.queries[index]
        if self.view_orders == "balanced":
            views = balanced_views(
                len(q.candidates), self.views, seed=self.seed, key=q.key, epoch=self.epoch
            )
        else:
            teacher = q.presentations[0].tolist() if self.view_orders == "teacher" else None
            views = draw_views(
                len(q.candidates),
                self.views,
                seed=self.seed,
                key=q.key,
                epoch=self.epoch,
                teacher_order=teacher,
            )
        return TrainExample(
            key=q.key,
            query=q.query,
            texts=tuple(c.text for c in q.candidates),
            labels=q.labels(self.teacher_orders),
            views=views,
            raw_labels=q.raw_labels(self.teacher_orders),
        )


def grade_token_ids(builder: PromptBuilder) -> tuple[int, ...]:
    """The grade labels' token ids (builds one throwaway prompt the first time)."""
    try:
        return builder.grade_token_ids
    except RuntimeError:
        builder.build("query", ["passage"])
        return builder.grade_token_ids


def distinct_views(
    views: Sequence[np.ndarray],
) -> tuple[list[tuple[int, tuple[int, ...]]], torch.Tensor]:
    """A batch's distinct views, ``views[q]`` being example q's (V, n): each view of an example
    once, in order, as (q, the view), and ``view_rows`` (Q, V): the index in that list of view v
    of example q, so identical views of an example share one prompt row. Refuses an empty batch
    and examples of different view counts."""
    if not views:
        raise ValueError("an empty batch")
    num_views = {len(v) for v in views}
    if len(num_views) != 1:
        raise ValueError(f"examples of one batch have different view counts {num_views}")
    rows: list[tuple[int, tuple[int, ...]]] = []
    view_rows = torch.zeros((len(views), num_views.pop()), dtype=torch.long)
    for q, example_views in enumerate(views):
        seen: dict[tuple[int, ...], int] = {}
        for v, view in enumerate(example_views):
            key = tuple(int(i) for i in view)
            if key not in seen:
                seen[key] = len(rows)
                rows.append((q, key))
            view_rows[q, v] = seen[key]
    return rows, view_rows


def left_pad(
    sequences: Sequence[Sequence[int]], pad_token_id: int
) -> tuple[dict[str, torch.Tensor], list[int]]:
    """Token id sequences left-padded into a batch like the inference backend: ``input_ids``,
    ``attention_mask`` and ``position_ids = cumsum(mask) − 1`` (R, L); and each row's padding
    length (what its positions shift by)."""
    width = max(len(s) for s in sequences)
    ids = torch.full((len(sequences), width), int(pad_token_id), dtype=torch.long)
    mask = torch.zeros((len(sequences), width), dtype=torch.long)
    pads = []
    for b, s in enumerate(sequences):
        pad = width - len(s)
        ids[b, pad:] = torch.tensor(s, dtype=torch.long)
        mask[b, pad:] = 1
        pads.append(pad)
    position_ids = (mask.cumsum(-1) - 1).clamp(min=0)
    return {"input_ids": ids, "attention_mask": mask, "position_ids": position_ids}, pads


class ReadoutCollator:
    """Tokenise every view of every example into a left-padded batch with slot bookkeeping.

    Returns tensors: ``input_ids``, ``attention_mask``, ``position_ids`` (R, L) for the R
    distinct (query, view) prompts; ``readout_positions`` (R, N): the index of the logits each
    slot is read from (0 on padding); ``slot_candidates`` (R, N): the candidate a slot shows (N
    on padding); ``slot_mask`` (R, N); ``view_rows`` (Q, V): the row of view v of query q;
    ``teacher_scores`` and ``candidate_mask`` (Q, N); ``teacher_raw`` (Q, N), the uncalibrated
    teacher scores, when every example has them.
    """

    def __init__(self, builder: PromptBuilder, pad_token_id: int) -> None:
        self.builder = builder
        self.pad_token_id = int(pad_token_id)

    def __call__(self, examples: Sequence[TrainExample]) -> dict[str, torch.Tensor]:
        distinct, view_rows = distinct_views([ex.views for ex in examples])
        n_max = max(len(ex.texts) for ex in examples)
        prompts = [
            self.builder.build(examples[q].query, [examples[q].texts[i] for i in view])
            for q, view in distinct
        ]
        padded, pads = left_pad([p.input_ids for p in prompts], self.pad_token_id)
        r = len(prompts)
        readout = torch.zeros((r, n_max), dtype=torch.long)
        slot_cand = torch.full((r, n_max), n_max, dtype=torch.long)
        slot_mask = torch.zeros((r, n_max), dtype=torch.bool)
        for b, (p, (_, view), pad) in enumerate(zip(prompts, distinct, pads, strict=True)):
            n = len(view)
            readout[b, :n] = torch.tensor([pad + pos for pos in p.readout_positions])
            slot_cand[b, :n] = torch.as_tensor(view, dtype=torch.long)
            slot_mask[b, :n] = True
        target = torch.zeros((len(examples), n_max), dtype=torch.float32)
        cand_mask = torch.zeros((len(examples), n_max), dtype=torch.bool)
        raw = None if any(ex.raw_labels is None for ex in examples) else torch.zeros_like(target)
        for q, ex in enumerate(examples):
            target[q, : len(ex.texts)] = torch.as_tensor(ex.labels, dtype=torch.float32)
            cand_mask[q, : len(ex.texts)] = True
            if raw is not None:
                raw[q, : len(ex.texts)] = torch.as_tensor(ex.raw_labels, dtype=torch.float32)
        return {
            **({"teacher_raw": raw} if raw is not None else {}),
            **padded,
            "readout_positions": readout,
            "slot_candidates": slot_cand,
            "slot_mask": slot_mask,
            "view_rows": view_rows,
            "teacher_scores": target,
            "candidate_mask": cand_mask,
        }
