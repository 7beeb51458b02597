"""Reader configs (strict loading) and the frozen reader on the tiny model."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import yaml

from presentation_dependence.errors import ConfigError
from presentation_dependence.qa.reader import FrozenReader, ReaderConfig, load_reader_config

REPO = Path(__file__).resolve().parents[2]


def test_default_reader_config_loads_by_name() -> None:
    cfg = load_reader_config("embedded-smollm2")
    assert cfg.name == "embedded-smollm2"
    assert cfg.model_name == "embedded:smollm2-135m-instruct"
    assert load_reader_config(str(REPO / "configs/reader/embedded-smollm2.yaml")) == cfg


def test_reader_config_is_strict(tmp_path: Path) -> None:
    bad = tmp_path / "r.yaml"
    bad.write_text("model_nme: x\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="Did you mean 'model_name'"):
        load_reader_config(str(bad))
    bad.write_text("max_new_tokens: 0\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="max_new_tokens"):
        load_reader_config(str(bad))
    bad.write_text("name: other\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="differs from the file name"):
        load_reader_config(str(bad))
    with pytest.raises(ConfigError, match="no reader config named 'nope'"):
        load_reader_config("nope")
    with pytest.raises(ConfigError, match="unknown template"):
        ReaderConfig(template="nope")


@pytest.fixture()
def tiny_reader_cfg(tmp_path: Path, tiny_model: str) -> ReaderConfig:
    path = tmp_path / "tiny.yaml"
    body = {"model_name": tiny_model, "device": "cpu", "max_new_tokens": 4}
    path.write_text(yaml.safe_dump(body), encoding="utf-8")
    return load_reader_config(str(path))


def test_frozen_reader_hash_cache_and_determinism(tiny_reader_cfg: ReaderConfig) -> None:
    reader = FrozenReader(tiny_reader_cfg)
    paras = ["Title A: text a.", "Title B:   text\nb."]
    first = reader.read("Who?", paras)
    text = reader.prompt_text("Who?", paras)
    assert "[1] Title A: text a.\n[2] Title B: text b." in text  # whitespace collapsed
    assert first.prompt_hash == hashlib.sha256(text.encode("utf-8")).hexdigest()
    assert not first.cached and 0 < first.generated_tokens <= 4
    again = reader.read("Who?", paras)
    assert again.cached and again.raw_answer == first.raw_answer
    assert reader.stats()["generations"] == 1 and reader.stats()["cache_hits"] == 1
    other = reader.read("Who?", paras[::-1])
    assert other.prompt_hash != first.prompt_hash and not other.cached
    assert "(none)" in reader.prompt_text("Who?", [])
    fresh = FrozenReader(tiny_reader_cfg, cache=False)  # greedy: same text without the cache
    assert fresh.read("Who?", paras).raw_answer == first.raw_answer
    assert fresh.read("Who?", paras).cached is False
    info = reader.describe()
    assert info["decoding"]["do_sample"] is False and info["reader"] == "tiny"
