"""Loaders of the response sets, on the real files in ../shared/data and on generic JSONL."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from presentation_dependence.errors import ConfigError
from presentation_dependence.judge.items.loaders import (
    ResponseDataConfig,
    default_shared_data,
    load_response_set,
)
from presentation_dependence.judge.items.records import JudgeRecord, read_records, write_records
from tests.judge.conftest import make_items


def cfg(shared: Path, dataset: str, **kw: object) -> ResponseDataConfig:
    return ResponseDataConfig(dataset=dataset, path=str(shared / dataset), **kw)  # type: ignore[arg-type]


def test_gsm8k(shared_data: Path) -> None:
    items = load_response_set(cfg(shared_data, "gsm8k-model-solutions"))
    assert len(items) == 1319 and all(len(it.responses) == 4 for it in items)
    one = load_response_set(cfg(shared_data, "gsm8k-model-solutions", require_one_correct=True))
    assert len(one) == 290  # SOURCE.md: 290 problems have exactly one correct solution
    assert one[0].item_id.startswith("gsm8k-test-") and one[0].num_correct == 1
    assert len(load_response_set(cfg(shared_data, "gsm8k-model-solutions", max_items=3))) == 3


def test_rm_bench(shared_data: Path) -> None:
    items = load_response_set(cfg(shared_data, "rm-bench", files=["chat_filtered"]))
    assert len(items) == 129
    assert items[0].labels == (True, True, True, False, False, False)
    four = load_response_set(cfg(shared_data, "rm-bench", files=["chat_filtered"], chosen_index=1))
    assert four[0].responses[0] == items[0].responses[1] and four[0].num_correct == 1
    assert len(four[0].responses) == 4
    with pytest.raises(ConfigError, match="not in"):
        load_response_set(cfg(shared_data, "rm-bench", files=["math_filtered"]))


def test_llmbar_and_hh(shared_data: Path) -> None:
    nat = load_response_set(cfg(shared_data, "llmbar", files=["Natural"]))
    assert len(nat) == 100 and sum(it.labels[0] for it in nat) == 42  # SOURCE.md: 42/58
    hh = load_response_set(cfg(shared_data, "hh-rlhf-harmless", max_items=20))
    assert len(hh) == 20 and all(it.labels == (True, False) for it in hh)
    assert all(
        not it.prompt.endswith("Assistant:") and it.responses[0] != it.responses[1] for it in hh
    )


def test_jsonl_and_records_roundtrip(tmp_path: Path, items_file: Path) -> None:
    items = load_response_set(ResponseDataConfig(dataset="jsonl", path=str(items_file)))
    assert items == make_items(40)
    rec = JudgeRecord(
        "a", "s", "", 4, (1, 0, 3, 2), 1, 0, "x [[B]]", "B", 1, "ok", (5, 6), "eos", 9
    )
    path = write_records(tmp_path / "r.jsonl", [rec, rec])
    assert read_records(path) == [rec, rec]
    assert rec.correct and rec.score() == 1.0
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x", "prompt": "p", "responses": ["a"], "labels": [true]}\n')
    with pytest.raises(ValueError, match="at least 2"):
        load_response_set(ResponseDataConfig(dataset="jsonl", path=str(bad)))


def test_reward_bench_2_needs_datasets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "datasets", None)  # import datasets -> ImportError
    with pytest.raises(ConfigError, match=r"pip install 'presentation-dependence\[hub\]'"):
        load_response_set(ResponseDataConfig(dataset="reward-bench-2"))


def test_reward_bench_2_reads_rows_without_map(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = [
        {
            "id": 7,
            "prompt": "p",
            "chosen": ["good"],
            "rejected": ["b1", "b2", "b3"],
            "subset": "Math",
        },
        {"id": 8, "prompt": "q", "chosen": ["g1", "g2"], "rejected": ["b"], "subset": "Ties"},
    ]
    calls: list[tuple[str, str, str | None]] = []

    def load_dataset(name: str, split: str, revision: str | None = None) -> list[dict[str, object]]:
        calls.append((name, split, revision))
        return rows  # a plain list: calling .map on it would fail

    monkeypatch.setitem(sys.modules, "datasets", types.SimpleNamespace(load_dataset=load_dataset))
    items = load_response_set(
        ResponseDataConfig(dataset="reward-bench-2", revision="abc", require_one_correct=True)
    )
    assert calls == [("allenai/reward-bench-2", "test", "abc")]
    assert [it.item_id for it in items] == ["rb2-7"]  # the Ties row has 2 correct: dropped
    assert items[0].labels == (True, False, False, False) and items[0].subset == "Math"


def test_default_shared_data_is_beside_the_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without $PRESDEP_SHARED_DATA: ``<clone parent>/shared/data``, as the tests' fixture."""
    monkeypatch.delenv("PRESDEP_SHARED_DATA", raising=False)
    repo = Path(__file__).resolve().parents[2]
    assert default_shared_data() == repo.parent / "shared" / "data"


def test_unknown_dataset() -> None:
    with pytest.raises(KeyError, match="Did you mean"):
        load_response_set(ResponseDataConfig(dataset="llmbarr"))


def test_jsonl_with_a_byte_order_mark(tmp_path: Path, items_file: Path) -> None:
    """Issue 16 (2): a BOM before the first item is not part of its JSON."""
    bom = tmp_path / "bom.jsonl"
    bom.write_bytes(b"\xef\xbb\xbf" + items_file.read_bytes())
    want = load_response_set(ResponseDataConfig(dataset="jsonl", path=str(items_file)))
    assert load_response_set(ResponseDataConfig(dataset="jsonl", path=str(bom))) == want
