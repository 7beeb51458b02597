"""Judge splits by item (issue 37): no item or prompt crosses into test, seeded held-out slices,
pairs from mixed items, sources checked by sha256; and the committed splits file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from presentation_dependence.errors import ConfigError
from presentation_dependence.judge.items.records import ResponseItem
from presentation_dependence.training.judge_splits import (
    build_splits,
    check_splits,
    export_split,
    load_split_items,
    load_splits_spec,
    read_splits,
    source_id,
)
from presentation_dependence.training.splits import SplitOverlapError, normalise_query
from tests.judge.conftest import write_jsonl

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "configs/judge/train/splits.json"


def items(n: int) -> list[ResponseItem]:
    out = []
    for i in range(n):
        labels = (True, False, False) if i % 3 else (True, True, False)
        out.append(
            ResponseItem(
                item_id=f"x{i:03d}",
                prompt=f"Prompt number {i}" if i != 25 else "PROMPT   number 2",  # = item 2's
                responses=(f"a{i}", f"b{i}", f"c{i}"),
                labels=labels,
                source="syn",
            )
        )
    return out


def spec_files(tmp_path: Path) -> Path:
    data = write_jsonl(tmp_path / "set.jsonl", items(40))
    (tmp_path / "test.yaml").write_text(
        f"task: judge\ndata: {{dataset: jsonl, path: {data}, max_items: 5, "
        "require_one_correct: true}\njudge: {judge_class: scripted}\n"
    )
    spec = tmp_path / "splits.yaml"
    spec.write_text(
        f"out: {tmp_path / 'splits.json'}\nseed: 3\nheldout_fraction: 0.25\nsets:\n"
        f"- {{name: one, test: {tmp_path / 'test.yaml'}, pool: {{dataset: jsonl, path: {data}}}}}\n"
        f"- {{name: pairs, test: {tmp_path / 'test.yaml'}, shape: pairs, "
        f"pool: {{dataset: jsonl, path: {data}}}}}\n"
    )
    return spec


def test_no_item_or_prompt_crosses_and_the_draw_is_seeded(tmp_path: Path) -> None:
    spec_path = spec_files(tmp_path)
    splits = build_splits(load_splits_spec(spec_path), spec_path=str(spec_path))
    one, pairs = splits["sets"]["one"], splits["sets"]["pairs"]
    # the test set is what the judge config judges: the first 5 one-correct items
    assert one["test"] == ["x001", "x002", "x004", "x005", "x007"]
    test = set(one["test"])
    for entry in (one, pairs):
        kept = entry["train"] + entry["heldout"]
        assert not {source_id(i) for i in kept} & test
        assert not set(entry["train"]) & set(entry["heldout"])
        assert "x025" not in {source_id(i) for i in kept}  # its prompt is a test prompt
    # pairs: one correct, one incorrect, from every item with both (two-correct items too)
    assert any(i.startswith("x006~") for i in pairs["train"] + pairs["heldout"])  # 2 correct
    for it in load_split_items(tmp_path / "splits.json", "train", ["pairs"]):
        assert it.labels == (True, False) and "~" in it.item_id
    # held out per source item: a source held out in one set is held out in the other
    held_one = {source_id(i) for i in one["heldout"]}
    held_pairs = {source_id(i) for i in pairs["heldout"]}
    in_one = {source_id(i) for i in one["train"] + one["heldout"]}
    assert held_one and held_pairs & in_one == held_one
    assert not held_one & {source_id(i) for i in pairs["train"]}
    again = build_splits(load_splits_spec(spec_path), spec_path=str(spec_path))
    assert again == splits and splits["seed"] == 3 and len(splits["sources"]) == 1
    # exported held-out slices are jsonl response sets
    files = export_split(tmp_path / "splits.json", "heldout", tmp_path / "heldout")
    assert [f.name for f in files] == ["one.jsonl", "pairs.jsonl"]
    first = json.loads(files[0].read_text().splitlines()[0])
    assert set(first) == {"id", "prompt", "responses", "labels", "source", "subset"}


def test_changed_sources_and_crossing_items_are_refused(tmp_path: Path) -> None:
    spec_path = spec_files(tmp_path)
    splits = build_splits(load_splits_spec(spec_path))
    crossed = json.loads(json.dumps(splits))
    crossed["sets"]["pairs"]["train"].append("x001~0-1")  # a test item's pair
    with pytest.raises(SplitOverlapError, match="train and the test"):
        check_splits(crossed)
    (tmp_path / "set.jsonl").write_text((tmp_path / "set.jsonl").read_text() + "\n")
    with pytest.raises(ConfigError, match="data changed since the splits were made"):
        load_split_items(tmp_path / "splits.json", "train")


def test_the_committed_splits_keep_every_test_item_out(shared_data: Path) -> None:
    splits = read_splits(COMMITTED)
    check_splits(splits)
    assert splits["seed"] == 0 and splits["sources"]
    sets = splits["sets"]
    assert len(sets["hh-rlhf-harmless"]["test"]) == 200
    assert sets["hh-rlhf-harmless"]["test"][:2] == [
        "hh-rlhf-harmless-test-0000",
        "hh-rlhf-harmless-test-0001",
    ]
    assert len(sets["gsm8k-four-way"]["test"]) == len(sets["rm-bench"]["test"]) == 100
    assert "train" not in sets["llmbar"]
    test_items = load_split_items(COMMITTED, "test")
    test_prompts = {normalise_query(it.prompt) for it in test_items}
    test_ids = {it.item_id for it in test_items}
    for split in ("train", "heldout"):
        for it in load_split_items(COMMITTED, split):
            assert source_id(it.item_id) not in test_ids
            assert normalise_query(it.prompt) not in test_prompts
