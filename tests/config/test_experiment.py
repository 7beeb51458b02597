import re
from pathlib import Path

import pytest
import yaml

from presentation_dependence.config import (
    apply_overrides,
    env_overrides,
    load_experiment_config,
)
from presentation_dependence.errors import ConfigError
from presentation_dependence.training.config import load_training_config


def write_cfg(tmp_path: Path, body: dict, name: str = "exp-a") -> Path:
    p = tmp_path / f"{name}.yaml"
    p.write_text(yaml.safe_dump(body), encoding="utf-8")
    return p


BASE = {
    "description": "demo",
    "reranker": {"reranker_class": "IdentityReranker"},
    "data": {"dataloader_class": "FixtureLoader", "path": "x.jsonl", "top_k": 50},
    "eval": {"measures": ["ndcg@10"]},
}


def test_id_is_file_stem_and_defaults_fill_in(tmp_path):
    cfg = load_experiment_config(write_cfg(tmp_path, BASE), environ={})
    assert cfg.id == "exp-a"
    assert cfg.data.top_k == 50
    assert cfg.data.split == "test"
    assert cfg.eval.relevance_level == 1


def test_precedence_yaml_env_cli(tmp_path):
    p = write_cfg(tmp_path, BASE)
    env = {"PRESDEP__DATA__TOP_K": "20", "PRESDEP__SEED": "7"}
    cfg = load_experiment_config(p, environ=env)
    assert (cfg.data.top_k, cfg.seed) == (20, 7)
    cfg = load_experiment_config(p, ["data.top_k=10"], environ=env)
    assert (cfg.data.top_k, cfg.seed) == (10, 7)


def test_override_values_are_yaml(tmp_path):
    cfg = load_experiment_config(
        write_cfg(tmp_path, BASE),
        ["eval.measures=[map, P@5]", "data.max_queries=3", "data.run=null"],
        environ={},
    )
    assert cfg.eval.measures == ["map", "P@5"]
    assert cfg.data.max_queries == 3


def test_unknown_key_suggests_close_match(tmp_path):
    with pytest.raises(ConfigError) as e:
        load_experiment_config(write_cfg(tmp_path, BASE), ["data.topk=3"], environ={})
    msg = str(e.value)
    assert "data.topk" in msg and "top_k" in msg and "exp-a.yaml" in msg


def test_unknown_top_level_block(tmp_path):
    with pytest.raises(ConfigError, match="Did you mean 'reranker'"):
        load_experiment_config(write_cfg(tmp_path, {**BASE, "rerankr": {}}), environ={})


def test_unknown_reranker_suggests(tmp_path):
    with pytest.raises(ConfigError, match="IdentityReranker"):
        load_experiment_config(
            write_cfg(tmp_path, BASE), ["reranker.reranker_class=IdentityRanker"], environ={}
        )


def test_unknown_loader_is_refused_at_load_with_its_line(tmp_path):
    body = {**BASE, "data": {**BASE["data"], "dataloader_class": "FixtureLoadr"}}
    path = write_cfg(tmp_path, body)
    line = next(i for i, t in enumerate(path.read_text().splitlines(), 1) if "FixtureLoadr" in t)
    with pytest.raises(ConfigError) as e:
        load_experiment_config(path, environ={})
    msg = str(e.value)
    assert f"exp-a.yaml:{line}:" in msg and "Did you mean 'FixtureLoader'" in msg


def test_unknown_reranker_option(tmp_path):
    with pytest.raises(ConfigError, match=r"reranker\.batch_sise"):
        load_experiment_config(write_cfg(tmp_path, BASE), ["reranker.batch_sise=2"], environ={})


@pytest.mark.parametrize(
    ("override", "needle"),
    [
        ("data.top_k=many", "expected an integer"),
        ("data.top_k=0", "top_k must be >= 1"),
        ("seed=-1", "seed must be >= 0"),
        ("eval.measures=[ndgc@10]", "unknown measure"),
        ("eval.relevance_level=true", "expected an integer"),
        ("data.path=3", "not a valid"),
    ],
)
def test_bad_values_are_named(tmp_path, override, needle):
    with pytest.raises(ConfigError, match=needle):
        load_experiment_config(write_cfg(tmp_path, BASE), [override], environ={})


def test_id_must_match_file(tmp_path):
    with pytest.raises(ConfigError, match="differs from its file name"):
        load_experiment_config(write_cfg(tmp_path, {**BASE, "id": "other"}), environ={})


def test_yaml_is_safe_loaded(tmp_path):
    p = tmp_path / "evil.yaml"
    p.write_text("description: !!python/object/apply:os.system ['echo hi']\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_experiment_config(p, environ={})


def test_bad_override_syntax(tmp_path):
    with pytest.raises(ConfigError, match="KEY=VALUE"):
        load_experiment_config(write_cfg(tmp_path, BASE), ["data.top_k"], environ={})


def test_env_overrides_parsing():
    env = {"PRESDEP__DATA__TOP_K": "5", "OTHER": "x", "PRESDEP__EVAL__RELEVANCE_LEVEL": "2"}
    assert env_overrides(env) == ["data.top_k=5", "eval.relevance_level=2"]


def test_apply_overrides_does_not_mutate():
    raw = {"data": {"top_k": 1}}
    out = apply_overrides(raw, ["data.top_k=2", "eval.measures=[map]"], "test")
    assert raw == {"data": {"top_k": 1}}
    assert out == {"data": {"top_k": 2}, "eval": {"measures": ["map"]}}


def test_resolved_yaml_round_trips(tmp_path):
    cfg = load_experiment_config(write_cfg(tmp_path, BASE), environ={})
    sub = tmp_path / "sub"
    sub.mkdir()
    again = write_cfg(sub, yaml.safe_load(cfg.to_yaml()))
    assert load_experiment_config(again, environ={}) == cfg


def test_shipped_configs_validate():
    root = Path(__file__).resolve().parents[2] / "configs" / "experiments"
    paths = sorted(root.glob("*.yaml"))
    assert paths, "no configs shipped"
    for p in paths:
        cfg = load_experiment_config(p, environ={})
        assert cfg.id == p.stem


def test_overrides_index_list_blocks_per_element():
    raw = {"silver": {"data": [{"top_k": 10, "path": "a"}, {"top_k": 10, "path": "b"}]}}
    out = apply_overrides(raw, ["silver.data.1.top_k=5", "silver.data.0=x"], "test")
    assert out == {"silver": {"data": ["x", {"top_k": 5, "path": "b"}]}}


@pytest.mark.parametrize(
    ("assignment", "message"),
    [
        ("silver.data.2.top_k=5", "index 2 is out of range (0 to 1)"),
        ("silver.data.top_k=5", "index its elements by number (0 to 1), e.g. silver.data.0.top_k"),
        ("silver.data.0.top_k.x=5", "'top_k' is not a block"),
    ],
)
def test_list_overrides_name_the_fix(assignment, message):
    raw = {"silver": {"data": [{"top_k": 10}, {"top_k": 10}]}}
    with pytest.raises(ConfigError, match=re.escape(message)):
        apply_overrides(raw, [assignment], "--override")


def test_training_config_takes_a_per_element_override():
    base = load_training_config("configs/study/oc-sft.yaml")
    cfg = load_training_config("configs/study/oc-sft.yaml", ["silver.data.0.top_k=5"])
    assert [d.top_k for d in cfg.silver.data] == [5] + [d.top_k for d in base.silver.data[1:]]
