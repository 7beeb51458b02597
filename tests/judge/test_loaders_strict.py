"""Issue 38 (5, 14): judge labels are parsed, never coerced; malformed input names file and line.

Every loader refuses a label that is not the documented JSON value (a boolean, or LLMBar's
integer 1 or 2), a missing or null field and a line or file that is not JSON, with an
:class:`InputFormatError` (exit 2) naming the file, the line or item, what was expected, what
was found and the fix, never a silent flip or an internal error (exit 3).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from presentation_dependence.cli import main
from presentation_dependence.errors import InputFormatError
from presentation_dependence.judge.items.loaders import ResponseDataConfig, load_response_set

GSM8K_KEYS = ("6b_finetuning", "6b_verification", "175b_finetuning", "175b_verification")


def _gsm8k_row(is_correct: Any = False) -> dict[str, Any]:
    sols = {k: {"is_correct": i == 0, "solution": f"s{i}"} for i, k in enumerate(GSM8K_KEYS)}
    sols["6b_verification"]["is_correct"] = is_correct
    return {"question": "q", **sols}


def _load(dataset: str, path: Path) -> list[Any]:
    return load_response_set(ResponseDataConfig(dataset=dataset, path=str(path)))


def _refused(dataset: str, path: Path, where: str, *needles: str) -> InputFormatError:
    with pytest.raises(InputFormatError) as info:
        _load(dataset, path)
    msg = str(info.value)
    assert msg.startswith(where), msg
    assert "Fix:" in msg and all(n in msg for n in needles), msg
    return info.value


def test_gsm8k_reads_booleans(tmp_path: Path) -> None:
    path = tmp_path / "g.jsonl"
    path.write_text(json.dumps(_gsm8k_row(True)) + "\n\n" + json.dumps(_gsm8k_row()) + "\n")
    items = _load("gsm8k-model-solutions", path)
    assert [it.item_id for it in items] == ["gsm8k-test-0000", "gsm8k-test-0002"]
    assert items[0].labels == (True, True, False, False)
    assert items[1].labels == (True, False, False, False)


@pytest.mark.parametrize("value", ["false", "true", 0, 1, None])
def test_gsm8k_is_correct_must_be_a_boolean(tmp_path: Path, value: Any) -> None:
    """``bool("false")`` is True: a quoted label flipped the item silently."""
    path = tmp_path / "g.jsonl"
    path.write_text(json.dumps(_gsm8k_row()) + "\n" + json.dumps(_gsm8k_row(value)) + "\n")
    err = _refused("gsm8k-model-solutions", path, f"{path}:2:", "6b_verification", "true or false")
    assert err.got == json.dumps(value)


def test_gsm8k_line_not_json(tmp_path: Path) -> None:
    path = tmp_path / "g.jsonl"
    path.write_text(json.dumps(_gsm8k_row()) + "\n{not json\n")
    _refused("gsm8k-model-solutions", path, f"{path}:2:", "invalid JSON")


def test_gsm8k_missing_solution_field(tmp_path: Path) -> None:
    row = _gsm8k_row()
    del row["175b_verification"]["solution"]
    path = tmp_path / "g.jsonl"
    path.write_text(json.dumps(row) + "\n")
    _refused("gsm8k-model-solutions", path, f"{path}:1:", "175b_verification", "solution")


def _llmbar(tmp_path: Path, label: Any, *, drop: bool = False) -> Path:
    good = {"input": "i", "output_1": "a", "output_2": "b", "label": 2}
    bad = {"input": "j", "output_1": "c", "output_2": "d", "label": label}
    if drop:
        del bad["label"]
    path = tmp_path / "Natural.json"
    path.write_text(json.dumps([good, bad]))
    return path


def test_llmbar_reads_integer_labels(tmp_path: Path) -> None:
    items = _load("llmbar", _llmbar(tmp_path, 1))
    assert [it.labels for it in items] == [(False, True), (True, False)]


@pytest.mark.parametrize("label", [2.7, 2.0, True, "1", None, 3, 0])
def test_llmbar_label_must_be_1_or_2(tmp_path: Path, label: Any) -> None:
    """2.7 read as 2 and ``true`` as 1; a null label was an internal error (exit 3)."""
    path = _llmbar(tmp_path, label)
    err = _refused("llmbar", path, f"{path} (item 1", "label", "1 or 2")
    assert err.got == json.dumps(label)


def test_llmbar_missing_label(tmp_path: Path) -> None:
    path = _llmbar(tmp_path, 1, drop=True)
    _refused("llmbar", path, f"{path} (item 1", "'label'", "missing")


def test_llmbar_file_not_json(tmp_path: Path) -> None:
    path = tmp_path / "Natural.json"
    path.write_text('[\n{"input": "i",\n oops}]')
    _refused("llmbar", path, f"{path}:3:", "JSON")


def test_llmbar_item_not_an_object(tmp_path: Path) -> None:
    path = tmp_path / "Natural.json"
    path.write_text('[["i", "a", "b", 1]]')
    _refused("llmbar", path, f"{path} (item 0", "object")


@pytest.mark.parametrize("labels", [["false", True], [0, 1], [None, True]])
def test_jsonl_labels_must_be_booleans(tmp_path: Path, labels: list[Any]) -> None:
    path = tmp_path / "items.jsonl"
    row = {"id": "x", "prompt": "p", "responses": ["a", "b"], "labels": labels}
    path.write_text(json.dumps({**row, "id": "ok", "labels": [False, True]}) + "\n")
    path.write_text(path.read_text() + json.dumps(row) + "\n")
    err = _refused("jsonl", path, f"{path}:2:", "labels[0]", "true or false")
    assert err.got == json.dumps(labels[0])


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"responses": "ab"}, "responses"),
        ({"responses": ["a", 2]}, "responses[1]"),
        ({"prompt": None}, "prompt"),
        ({"labels": True}, "labels"),
    ],
)
def test_jsonl_fields_are_not_coerced(tmp_path: Path, change: dict[str, Any], needle: str) -> None:
    path = tmp_path / "items.jsonl"
    row = {"id": "x", "prompt": "p", "responses": ["a", "b"], "labels": [True, False], **change}
    path.write_text(json.dumps(row) + "\n")
    _refused("jsonl", path, f"{path}:1:", needle)


def _hh(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "harmless-base_test.jsonl.gz"
    path.write_bytes(gzip.compress("".join(line + "\n" for line in lines).encode()))
    return path


def test_hh_rlhf_malformed_lines(tmp_path: Path) -> None:
    good = json.dumps(
        {"chosen": "\n\nHuman: h\n\nAssistant: a", "rejected": "\n\nHuman: h\n\nAssistant: b"}
    )
    assert [it.responses for it in _load("hh-rlhf-harmless", _hh(tmp_path, good))] == [("a", "b")]
    path = _hh(tmp_path, good, "{oops")
    _refused("hh-rlhf-harmless", path, f"{path}:2:", "invalid JSON")
    path = _hh(tmp_path, good, json.dumps({"chosen": "x"}))
    _refused("hh-rlhf-harmless", path, f"{path}:2:", "'rejected'", "missing")
    path = tmp_path / "harmless-base_test.jsonl.gz"
    path.write_bytes(b"not gzip at all")
    _refused("hh-rlhf-harmless", path, f"{path}:", "gzip")


def test_rm_bench_malformed_items(tmp_path: Path) -> None:
    good = {"id": 1, "prompt": "p", "chosen": ["a", "b", "c"], "rejected": ["x", "y", "z"]}
    path = tmp_path / "chat_filtered.json"
    path.write_text(json.dumps([good, {**good, "id": 2, "chosen": "abc"}]))
    _refused("rm-bench", path, f"{path} (item 1", "chosen")
    path.write_text(json.dumps([good, {**good, "id": 2, "chosen": ["a"]}]))
    with pytest.raises(InputFormatError, match=r"\(item 1.*chosen\[2\]"):
        load_response_set(ResponseDataConfig(dataset="rm-bench", path=str(path), chosen_index=2))
    path.write_text(json.dumps([{k: v for k, v in good.items() if k != "id"}]))
    _refused("rm-bench", path, f"{path} (item 0", "'id'", "missing")


def test_judge_cli_exits_2_naming_the_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """Through the CLI a mistyped label is a user error (exit 2), never an internal one."""
    items = tmp_path / "items.jsonl"
    row = {"id": "a", "prompt": "p", "responses": ["x", "y"], "labels": ["false", True]}
    items.write_text(json.dumps(row) + "\n")
    cfg = tmp_path / "judge.yaml"
    body = {"data": {"dataset": "jsonl", "path": str(items)}, "judge": {"judge_class": "scripted"}}
    cfg.write_text(json.dumps(body))
    assert main(["judge", str(cfg), "--out", str(tmp_path / "out")]) == 2
    assert f"{items}:1:" in capsys.readouterr().err


def test_a_set_left_empty_is_a_user_error(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """Every item having two true labels left nothing to judge: exit 2 saying why, not exit 3
    ("no judge records ... a bug")."""
    items = tmp_path / "items.jsonl"
    row = {"id": "a", "prompt": "p", "responses": ["x", "y"], "labels": [True, True]}
    items.write_text(json.dumps(row) + "\n")
    cfg = tmp_path / "judge.yaml"
    body = {"data": {"dataset": "jsonl", "path": str(items)}, "judge": {"judge_class": "scripted"}}
    cfg.write_text(json.dumps(body))
    assert main(["judge", str(cfg), "--out", str(tmp_path / "out")]) == 2
    assert "all 1 have not exactly one correct response" in capsys.readouterr().err
