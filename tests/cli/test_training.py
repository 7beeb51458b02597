"""``presdep silver | train | select-lambda`` on the tiny model, against their scripts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from presentation_dependence.cli import main
from presentation_dependence.training.silver_format import read_silver_file
from tests.cli.conftest import files_under, load_script
from tests.training.conftest import NOVELEVAL, one_torch_thread, student_raw

__all__ = ["one_torch_thread"]  # the tiny model runs on one thread here too (autouse fixture)


def _config(root: Path, name: str, tiny_model: str, **raw: object) -> Path:
    """A training config whose silver file and student go under ``root/name-*``."""
    body = student_raw(
        tiny_model,
        root / f"{name}-silver.jsonl",
        root / f"{name}-student",
        silver={"seed": 0, "data": [{"path": NOVELEVAL, "top_k": 4, "max_queries": 2}]},
        train={"max_steps": 1},
        **raw,
    )
    path = root / f"{name}.yaml"
    path.write_text(yaml.safe_dump(body), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def silvered(tiny_model: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """Silver labels made by ``presdep silver`` (two shards, then the file) and by the script."""
    root = tmp_path_factory.mktemp("cli-train")
    cli, script = _config(root, "cli", tiny_model), _config(root, "script", tiny_model)
    codes = [
        main(["silver", str(cli), "--shard", "0/2"]),
        main(["silver", str(cli), "--shard", "1/2"]),
    ]
    before = (root / "cli-silver.jsonl").exists()
    codes.append(main(["silver", str(cli)]))
    codes.append(load_script("scripts/train/make_silver.py").main([str(script)]))
    return {"root": root, "cli": cli, "script": script, "codes": codes, "sharded_file": before}


def test_silver_writes_the_same_labels_as_its_script(silvered: dict) -> None:
    root = silvered["root"]
    assert silvered["codes"] == [0, 0, 0, 0]
    assert not silvered["sharded_file"], "a --shard run writes parts, never the file"
    head_cli, queries_cli = read_silver_file(root / "cli-silver.jsonl")
    head_script, queries_script = read_silver_file(root / "script-silver.jsonl")
    assert len(queries_cli) == 2
    assert [q.to_dict() for q in queries_cli] == [q.to_dict() for q in queries_script]
    assert {k: v for k, v in head_cli.items() if k != "provenance"} == {
        k: v for k, v in head_script.items() if k != "provenance"
    }
    assert head_cli["provenance"]["command"][:2] == ["presdep", "silver"]


def test_train_writes_the_same_student_as_its_script(silvered: dict, capsys) -> None:
    pytest.importorskip("peft")
    root = silvered["root"]
    capsys.readouterr()
    assert main(["train", str(silvered["cli"])]) == 0
    adapter = root / "cli-student" / "adapter"
    assert capsys.readouterr().out.strip() == str(adapter)
    assert (adapter / "adapter_model.safetensors").is_file()
    assert main(["train", str(silvered["cli"])]) == 0  # finished: nothing to do
    assert load_script("scripts/train/train_student.py").main([str(silvered["script"])]) == 0
    assert files_under(root / "cli-student") == files_under(root / "script-student")


def test_train_lambda_from_applies_the_chosen_lambda(silvered: dict, tmp_path, caplog) -> None:
    """λ from a selection is another config: the finished student (λ = 1) is refused, untouched."""
    pytest.importorskip("peft")
    if not (silvered["root"] / "cli-student" / "adapter").is_dir():
        assert main(["train", str(silvered["cli"])]) == 0
    chosen = tmp_path / "lambda_selection.json"
    chosen.write_text(json.dumps({"chosen_lambda": 3.0}))
    assert main(["train", str(silvered["cli"]), "--lambda-from", str(chosen)]) == 2
    assert "different config" in caplog.text and "lambda_" in caplog.text
    chosen.write_text(json.dumps({"chosen": 3.0}))
    caplog.clear()
    assert main(["train", str(silvered["cli"]), "--lambda-from", str(chosen)]) == 2
    assert "numeric 'chosen_lambda'" in caplog.text


def test_select_lambda_refuses_heldout_queries_of_the_test_set(
    silvered: dict, tiny_model: str, tmp_path, caplog
) -> None:
    block = {"path": NOVELEVAL, "top_k": 4, "max_queries": 2}
    cfg = _config(
        tmp_path,
        "sel",
        tiny_model,
        splits={"heldout": [block], "test": [block]},
        selection={"lambdas": [0.5, 2.0], "num_presentations": 2},
    )
    out = tmp_path / "selection"
    assert main(["select-lambda", str(cfg), "--out", str(out)]) == 2
    assert "overlap the test" in caplog.text and not out.exists()


@pytest.mark.slow
def test_select_lambda_writes_its_curve_into_a_document(tiny_model: str, tmp_path) -> None:
    pytest.importorskip("peft")
    from tests.training.test_lambda_select import fixture_of

    cfg = _config(
        tmp_path,
        "sel",
        tiny_model,
        splits={
            "heldout": [fixture_of(tmp_path / "heldout.jsonl", ["10", "11"])],
            "test": [fixture_of(tmp_path / "test.jsonl", ["12"])],
        },
        selection={"lambdas": [0.5], "num_presentations": 2},
    )
    doc = tmp_path / "doc.md"
    doc.write_text(
        "before\n<!-- lambda-selection:start -->\nold\n<!-- lambda-selection:end -->\nafter\n"
    )
    assert main(["silver", str(cfg)]) == 0
    assert main(["select-lambda", str(cfg), "--out", str(tmp_path / "sel"), "--doc", str(doc)]) == 0
    text = doc.read_text()
    assert text.startswith("before\n") and text.endswith("after\n") and "\nold\n" not in text
    assert "| **0.5** (chosen) |" in text and "2 held-out queries, M=2." in text


def test_train_pause_at_stops_at_the_snapshot_and_a_rerun_trains_on(
    silvered: dict, tmp_path, capsys
) -> None:
    """``--pause-at`` is the pause of ``select-lambda`` from the command line: the run stops
    with that step's snapshot (printed), and the same command without it trains to the end."""
    pytest.importorskip("peft")
    out = tmp_path / "paused"
    args = [
        "train",
        str(silvered["cli"]),
        *("-o", f"output_dir={out}", "-o", "train.max_steps=2"),
        *("-o", "train.save_steps=1", "-o", "train.keep_snapshots=true"),
    ]
    capsys.readouterr()
    assert main([*args, "--pause-at", "1"]) == 0
    snapshot = Path(capsys.readouterr().out.strip())
    assert snapshot.parent.parent == out and (snapshot / "adapter_model.safetensors").is_file()
    assert not (out / "adapter").exists()
    assert main([*args, "--pause-at", "1"]) == 0  # paused before: nothing trains
    assert Path(capsys.readouterr().out.strip()) == snapshot
    assert main(args) == 0
    assert (out / "adapter" / "adapter_model.safetensors").is_file()
    assert main([*args, "--pause-at", "0"]) == 2
