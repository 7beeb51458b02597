"""Issue 38 (12): a YAML alias bomb in a typed config field is refused in bounded time and
memory, and no config error echoes more than a bounded repr of a value."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from presentation_dependence.config import load_experiment_config
from presentation_dependence.errors import ConfigError
from presentation_dependence.fields import shown

BASE = "reranker:\n  reranker_class: IdentityReranker\ndata:\n  path: x.jsonl\n"


def bomb(levels: int, width: int = 9) -> str:
    """A YAML flow list of ``levels`` anchors, each repeating the previous ``width`` times:
    ``width ** levels`` leaves from a few hundred bytes."""
    items = [f"&a0 [{', '.join(['x'] * width)}]"]
    for i in range(1, levels):
        items.append(f"&a{i} [{', '.join([f'*a{i - 1}'] * width)}]")
    return f"[{', '.join(items)}]"


def test_a_type_error_echoes_a_bounded_repr_of_a_large_value(tmp_path: Path) -> None:
    text = BASE + f"seed: {bomb(5)}\n"  # 9**5 = 59,049 leaves: under the size limit
    p = tmp_path / "exp.yaml"
    p.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as e:
        load_experiment_config(p, environ={})
    msg = str(e.value)
    assert msg.startswith(f"{p}:5: seed: ")
    assert "expected an integer" in msg
    assert len(msg) < 400, len(msg)


def test_a_600_byte_alias_bomb_is_refused_at_once(tmp_path: Path) -> None:
    text = BASE + f"seed: {bomb(9)}\n"  # 9**9 = 387 million leaves
    assert len(text) < 700
    p = tmp_path / "exp.yaml"
    p.write_text(text, encoding="utf-8")
    t0 = time.perf_counter()
    with pytest.raises(ConfigError, match=r"expands to more than 1,000,000 values") as e:
        load_experiment_config(p, environ={})
    assert time.perf_counter() - t0 < 10
    assert str(e.value).startswith(str(p)) and "alias" in str(e.value)


def test_an_override_alias_bomb_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "exp.yaml"
    p.write_text(BASE, encoding="utf-8")
    with pytest.raises(ConfigError, match=r"--override: value of 'seed': expands to more than"):
        load_experiment_config(p, [f"seed={bomb(8)}"], environ={})


def test_a_literal_field_echoes_a_bounded_value(tmp_path: Path) -> None:
    p = tmp_path / "exp.yaml"
    p.write_text(BASE.replace("IdentityReranker", "x" * 5000), encoding="utf-8")
    with pytest.raises(ConfigError) as e:
        load_experiment_config(p, environ={})
    assert len(str(e.value)) < 1500


def test_shown_is_repr_for_small_values_and_bounded_for_large() -> None:
    assert shown("fifty") == "'fifty'"
    assert shown(3.5) == "3.5"
    assert shown({"a": [1, 2]}) == "{'a': [1, 2]}"
    assert len(shown(list(range(10**6)))) < 100
    assert len(shown("y" * 10**6)) < 200


@pytest.mark.parametrize("field", ["reranker_class", "chunk_size"])
def test_a_large_value_in_the_reranker_block_is_echoed_bounded(tmp_path: Path, field: str) -> None:
    p = tmp_path / "exp.yaml"
    p.write_text(
        "reranker:\n  reranker_class: GradeReranker\n"
        f"  {field}: {bomb(5)}\ndata:\n  path: x.jsonl\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as e:
        load_experiment_config(p, environ={})
    assert f"{p}:" in str(e.value) and len(str(e.value)) < 1500
