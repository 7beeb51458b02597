"""Fixtures of the judge tests: a small JSONL response set written on the fly."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from presentation_dependence.judge.items.records import ResponseItem


def make_items(n: int = 6, k: int = 4) -> list[ResponseItem]:
    """``n`` items of ``k`` responses, exactly one correct (at index i mod k)."""
    return [
        ResponseItem(
            item_id=f"it{i:02d}",
            prompt=f"What is {i} + {i}?",
            responses=tuple(f"The answer is {2 * i + (j != i % k)}." for j in range(k)),
            labels=tuple(j == i % k for j in range(k)),
            source="synthetic",
        )
        for i in range(n)
    ]


def write_jsonl(path: Path, items: list[ResponseItem]) -> Path:
    path.write_text(
        "".join(
            json.dumps(
                {
                    "id": it.item_id,
                    "prompt": it.prompt,
                    "responses": list(it.responses),
                    "labels": list(it.labels),
                    "source": it.source,
                }
            )
            + "\n"
            for it in items
        )
    )
    return path


@pytest.fixture
def items_file(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / "items.jsonl", make_items(40))


def noise_outputs(out: Path) -> tuple[dict[str, bytes], Any, bytes]:
    """What a noise run folder holds apart from its timings: the runs' records, ``noise.json``
    without the seconds, the summary (for comparing two runs of the same calls)."""
    runs = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.glob("noise/*/run*.jsonl")}
    noise = json.loads((out / "noise.json").read_text())
    for r in noise["runs"]:
        r.pop("seconds")  # a timing
    return runs, noise, (out / "summary.json").read_bytes()
