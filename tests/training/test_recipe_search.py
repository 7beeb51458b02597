"""The recipe search on the tiny model: arms derived from one base config, trained and
measured, the table with paired differences and cost, the command and its refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

pytest.importorskip("peft")

from presentation_dependence.cli import main
from presentation_dependence.errors import ConfigError
from presentation_dependence.studies.recipe import (
    arm_config,
    load_search,
    recipe_markdown,
    recipe_rows,
    run_arm,
)
from tests.training.conftest import NOVELEVAL, student_raw


def _search(tmp_path: Path, tiny_model: str, silver_file: Path, **extra: object) -> Path:
    heldout = {"heldout": [{"path": NOVELEVAL, "top_k": 4, "max_queries": 2}]}
    base = student_raw(tiny_model, silver_file, tmp_path / "unused", splits=heldout)
    (tmp_path / "base.yaml").write_text(yaml.safe_dump(base))
    search = {
        "base": str(tmp_path / "base.yaml"),
        "output_root": str(tmp_path / "arms"),
        "reference": "ref",
        "probe": {"train.max_steps": 2, "train.save_steps": 1, "train.keep_snapshots": True},
        "curve": {"num_presentations": 2, "max_queries": 2, "seed": 0},
        "arms": {"ref": {}, "mle": {"loss.rank_weight": 1.0, "loss.rank_loss": "listmle"}},
        **extra,
    }
    path = tmp_path / "search.yaml"
    path.write_text(yaml.safe_dump(search, sort_keys=False))
    return path


def test_arms_train_measure_and_tabulate(tiny_model, silver_file, tmp_path) -> None:
    path = _search(tmp_path, tiny_model, silver_file)
    search = load_search(path)
    cfg = arm_config(search, "mle")
    assert cfg.loss.rank_loss == "listmle" and cfg.train.max_steps == 2
    assert cfg.resolved_output_dir == tmp_path / "arms" / "mle"
    ref_points = run_arm(search, "ref")
    mle_points = run_arm(search, "mle")
    assert [p["step"] for p in ref_points] == [0, 1, 2]  # the base model with the reference
    assert [p["step"] for p in mle_points] == [1, 2]
    rows = recipe_rows(search)
    assert [r["arm"] for r in rows] == ["ref", "mle"]
    assert rows[1]["reference"] == ref_points[-1] and rows[1]["cost"]["tokens"] > 0
    table = recipe_markdown(search, rows)
    d = mle_points[-1]["ndcg_mean"] - ref_points[-1]["ndcg_mean"]
    assert "| mle | `loss.rank_weight: 1.0`, `loss.rank_loss: listmle` | 2 |" in table
    assert f"{d:+.3f} [" in table and "| ref | (the reference) | 2 |" in table
    # the command renders the same table into a doc block, with the plot
    doc = tmp_path / "docs" / "R.md"
    doc.parent.mkdir()
    doc.write_text("x\n<!-- recipe-search:start -->\n<!-- recipe-search:end -->\n")
    png = tmp_path / "docs" / "r.png"
    assert (
        main(["study", "recipe", str(path), "--table", "--doc", str(doc), "--png", str(png)]) == 0
    )
    assert table in doc.read_text() and "](r.png)" in doc.read_text()
    assert png.stat().st_size > 0
    # an archive of the arm folders renders the same table
    archive = tmp_path / "archive"
    assert (
        main(
            [
                "study",
                "recipe",
                str(path),
                "--arm",
                "ref",
                "--arm",
                "mle",
                "--archive-to",
                str(archive),
            ]
        )
        == 0
    )  # nothing trained again: archived
    assert (
        not list(archive.rglob("*.safetensors")) and (archive / "mle" / "provenance.json").is_file()
    )
    assert recipe_markdown(search, recipe_rows(search, archive)) == table
    assert main(["study", "recipe", str(path)]) == 2


def test_search_file_refusals(tiny_model, silver_file, tmp_path) -> None:
    with pytest.raises(ConfigError, match="reference"):
        load_search(_search(tmp_path, tiny_model, silver_file, reference="nobody"))
    with pytest.raises(ConfigError, match=r"did you mean|unknown"):
        load_search(_search(tmp_path, tiny_model, silver_file, probes={}))
    search = load_search(_search(tmp_path, tiny_model, silver_file))
    with pytest.raises(ConfigError, match="arm 'x'"):
        arm_config(search, "x")
    json.dumps(search.arms)  # plain data


def test_every_committed_arm_loads_with_its_keys() -> None:
    """The committed search: each arm is the base config plus its keys, read back as given
    (5e-05 stays a number), in its own folder."""
    search = load_search("configs/study/recipe-search.yaml")
    for arm, keys in search.arms.items():
        cfg = arm_config(search, arm)
        assert cfg.resolved_output_dir.name == arm
        assert cfg.train.max_steps == keys.get("train.max_steps", search.probe["train.max_steps"])
    full = arm_config(search, "full-finetune")
    assert full.finetune == "full" and full.train.learning_rate == 5e-05
    assert arm_config(search, "oc-sft-3ep-early-stop").early_stopping.enabled
