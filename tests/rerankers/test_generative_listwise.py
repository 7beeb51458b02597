"""GenerativeListwiseReranker: response analysis, repair, sliding windows, tiny model end to end."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from presentation_dependence.errors import ConfigError
from presentation_dependence.records import Candidate, Query
from presentation_dependence.rerankers import RERANKERS
from presentation_dependence.rerankers.generative_listwise import (
    GenerativeListwiseOptions,
    GenerativeListwiseReranker,
    analyse_response,
    sliding_windows,
)

QUERY = Query("q-gen", "what do fleas eat")


@pytest.mark.parametrize(
    ("text", "status", "order"),
    [
        ("[3] > [1] > [2]", "ok", (2, 0, 1)),
        (" [2] >[3]> [1]\n", "ok", (1, 2, 0)),
        ("[3] > [1]", "missing_ids", (2, 0, 1)),
        ("[3] > [3] > [1] > [2]", "repetition", (2, 0, 1)),
        ("[2] > [2]", "repetition", (1, 0, 2)),
        ("The ranking is [2] > [1] > [3].", "wrong_format", (1, 0, 2)),
        ("[5] > [1] > [2] > [3]", "wrong_format", (0, 1, 2)),
        ("I cannot rank these.", "wrong_format", (0, 1, 2)),
    ],
)
def test_analyse_response(text: str, status: str, order: tuple[int, ...]) -> None:
    a = analyse_response(text, 3)
    assert a.status == status and a.order == order
    assert sorted(a.order) == [0, 1, 2]


def test_sliding_windows_back_to_front() -> None:
    assert sliding_windows(100, 20, 10)[:2] == [(80, 100), (70, 90)]
    assert sliding_windows(100, 20, 10)[-1] == (0, 20)
    assert len(sliding_windows(100, 20, 10)) == 9
    assert sliding_windows(9, 20, 10) == [(0, 9)]
    assert sliding_windows(25, 20, 10) == [(5, 25), (0, 15)]


def test_options_refuse_a_stride_that_skips() -> None:
    with pytest.raises(ConfigError, match="skip"):
        GenerativeListwiseOptions(window_size=4, stride=5)


class Scripted(GenerativeListwiseReranker):
    """Answers every window by passage length, longest first (a known permutation)."""

    def generate(self, query: str, passages: Sequence[str]) -> tuple[str, int, int]:
        ranked = sorted(range(len(passages)), key=lambda i: (-len(passages[i]), i))
        return " > ".join(f"[{i + 1}]" for i in ranked), 0, 0


def test_sliding_window_sorts_with_a_scripted_model() -> None:
    cands = [Candidate(f"d{i}", "x" * ((i * 7) % 30 + 1), i + 1) for i in range(30)]
    r = Scripted(GenerativeListwiseOptions(window_size=6, stride=3))
    res = r.rank(QUERY, cands)
    top = [it.candidate.docid for it in res.ranked()[:3]]
    best = sorted(cands, key=lambda c: (-len(c.text), c.rank))[:3]
    assert top == [c.docid for c in best]  # the best window_size - stride bubble to the front
    assert res.details["statuses"] == {"ok": res.details["windows"]}
    assert all(0.0 <= it.score <= 3.0 for it in res.items)


def test_tiny_model_end_to_end(tiny_model: str) -> None:
    import torch

    torch.set_num_threads(1)
    assert RERANKERS.get("GenerativeListwiseReranker") is GenerativeListwiseReranker
    opts = GenerativeListwiseOptions(
        model_name=tiny_model, device="cpu", dtype="float32", window_size=4, stride=2
    )
    cands = [Candidate(f"d{i}", f"flea text {i}", i + 1) for i in range(6)]
    res = GenerativeListwiseReranker(opts).rank(QUERY, cands)
    assert res.details["windows"] == 2  # (2, 6) then (0, 4)
    assert sum(res.details["statuses"].values()) == 2
    assert sorted(it.rank for it in res.items) == list(range(1, 7))
    again = GenerativeListwiseReranker(opts).rank(QUERY, cands)
    assert [it.score for it in again.items] == [it.score for it in res.items]
