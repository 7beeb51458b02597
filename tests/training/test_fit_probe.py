"""The fit ladder on the tiny random model: (a) slot-only labels and (b) a handful of queries in
a fixed order are learned; the ladder file loads strictly and its table is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("peft")

from presentation_dependence.errors import ConfigError
from presentation_dependence.training.fit_probe import (
    ProbeConfig,
    ladder_table,
    load_ladder,
    run_probe,
)
from tests.training.conftest import ALL_LINEAR

ROOT = Path(__file__).resolve().parents[2]
NOVELEVAL = str(ROOT / "fixtures" / "noveleval" / "noveleval.jsonl")


def probe(tiny_model: str, name: str, **kw: object) -> ProbeConfig:
    base: dict[str, object] = {
        "name": name,
        "train_path": NOVELEVAL,
        "heldout_path": NOVELEVAL,
        "n_train": 2,
        "n_heldout": 1,
        "max_passage_chars": 40,
        "model_name": tiny_model,
        "dtype": "float32",
        "r": 8,
        "target_modules": list(ALL_LINEAR),
        "learning_rate": 1e-2,
        "eval_every": 20,
        "steps": 40,
    }
    base.update(kw)
    return ProbeConfig(**base)  # type: ignore[arg-type]


def _mse(result: dict, step: int) -> float:
    return next(e["mse"] for e in result["evals"] if e["step"] == step and e["split"] == "train")


def test_a_slot_only_labels_are_learned_at_once(tiny_model: str, tmp_path: Path) -> None:
    cfg = probe(tiny_model, "a", labels="slot", views="fixed", fit="ce")
    result = run_probe(cfg, tmp_path)
    assert _mse(result, 40) < 0.1 * _mse(result, 0)
    saved = json.loads((tmp_path / "a" / "probe.json").read_text())
    assert saved["config"]["labels"] == "slot" and len(saved["steps"]) == 40


def test_b_a_handful_of_queries_in_a_fixed_order_fit_to_near_zero(
    tiny_model: str, tmp_path: Path
) -> None:
    cfg = probe(tiny_model, "b", labels="gold", views="fixed", fit="ce", steps=60, eval_every=60)
    result = run_probe(cfg, tmp_path)
    assert _mse(result, 60) < 0.1 * _mse(result, 0)
    table = ladder_table([result])
    assert "| b | gold | fixed | trailing | ce | LoRA r8 all-linear |" in table


def test_ladder_file_is_strict(tmp_path: Path) -> None:
    ladder = load_ladder(ROOT / "configs" / "probes" / "fit-ladder.yaml")
    assert "c-interleaved-ce-r16all" in ladder
    assert ladder["c-interleaved-ce-r16all"].template == "interleaved_grade_v1"
    bad = tmp_path / "bad.yaml"
    bad.write_text("defaults: {train_path: x, heldout_path: y}\nprobes:\n  p: {lerning_rate: 1}\n")
    with pytest.raises(ConfigError, match="learning_rate"):
        load_ladder(bad)
