"""The seeding module: its streams equal the seed material they document, and it is the only
place in src/ and scripts/ that makes a numpy generator."""

from __future__ import annotations

import ast
import zlib
from pathlib import Path

import numpy as np
import pytest

from presentation_dependence.metrics.stats import named_rng as stats_named_rng
from presentation_dependence.seeding import named_rng, rng_from, seed_words

ROOT = Path(__file__).resolve().parents[1]
ALLOWED = ROOT / "src" / "presentation_dependence" / "seeding.py"
FORBIDDEN = {"default_rng", "RandomState"}


def _draws(rng: np.random.Generator) -> list[int]:
    return rng.integers(1 << 62, size=8).tolist()


def test_rng_from_is_default_rng_of_the_seed_words():
    crc = zlib.crc32
    expected = np.random.default_rng([3, crc(b"views"), crc("q/é".encode()), 2])
    assert _draws(rng_from(3, "views", "q/é", 2)) == _draws(expected)
    assert _draws(rng_from(3, b"views", "q/1", 2)) == _draws(
        np.random.default_rng([3, crc(b"views"), crc(b"q/1"), 2])
    )
    assert seed_words(5, "a", b"a", np.int64(7)) == [5, crc(b"a"), crc(b"a"), 7]
    assert _draws(rng_from(13)) == _draws(np.random.default_rng(13))  # a bare seed, as before


def test_named_rng_keeps_its_stream_and_home():
    expected = np.random.default_rng([0, zlib.crc32(b"variant"), zlib.crc32(b"metric")])
    assert _draws(named_rng(0, "variant", "metric")) == _draws(expected)
    assert stats_named_rng is named_rng


@pytest.mark.parametrize("bad", [(), (-1,), (True,), (1.5,)])
def test_bad_seed_material_is_refused(bad):
    with pytest.raises((TypeError, ValueError)):
        rng_from(*bad)


def _generator_calls(path: Path) -> list[str]:
    """``file:line`` of every call (or import) of a forbidden numpy generator maker."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    hits = []
    for node in ast.walk(tree):
        name = None
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
        elif isinstance(node, ast.ImportFrom):
            name = next((a.name for a in node.names if a.name in FORBIDDEN), None)
        if name in FORBIDDEN:
            hits.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return hits


def test_seeding_is_the_only_maker_of_generators():
    files = sorted((ROOT / "src").rglob("*.py")) + sorted((ROOT / "scripts").rglob("*.py"))
    assert ALLOWED in files
    hits = [h for p in files if p != ALLOWED for h in _generator_calls(p)]
    assert not hits, (
        "numpy generators made outside presentation_dependence/seeding.py: "
        f"{', '.join(hits)}. Fix: use seeding.rng_from(seed, *names) or named_rng"
    )
    assert _generator_calls(ALLOWED)  # the scan does see a call where there is one
