"""Every random generator of the package, from explicit seed material (the only ``default_rng``).

A stream is named by its seed words: integers as they are, names (``str``, UTF-8) and ``bytes``
as their CRC-32. So ``rng_from(seed, "judge-placement", item_id)`` is
``numpy.random.default_rng([seed, crc32(b"judge-placement"), crc32(item_id)])``: the draws of
one purpose and key never depend on what else was drawn before, on the order queries are
processed in, or on sharding. ``tests/test_seeding.py`` checks that no other module of
``src/`` or ``scripts/`` calls ``default_rng``.
"""

from __future__ import annotations

import zlib

import numpy as np

__all__ = ["Entropy", "named_rng", "rng_from", "seed_words"]

Entropy = int | str | bytes


def seed_words(*parts: Entropy) -> list[int]:
    """The integer words ``rng_from(*parts)`` seeds with (names as their CRC-32)."""
    words = []
    for p in parts:
        if isinstance(p, str | bytes):
            words.append(zlib.crc32(p.encode("utf-8") if isinstance(p, str) else p))
        elif isinstance(p, int | np.integer) and not isinstance(p, bool) and p >= 0:
            words.append(int(p))
        else:
            raise ValueError(f"seed material is an int >= 0, a str or bytes; got {p!r}")
    return words


def rng_from(*parts: Entropy) -> np.random.Generator:
    """``default_rng(seed_words(*parts))``: a generator from explicit seed material."""
    if not parts:
        raise ValueError("rng_from needs seed material: an unseeded generator is not allowed")
    return np.random.default_rng(seed_words(*parts))


def named_rng(seed: int, *names: str) -> np.random.Generator:
    """A Generator seeded by ``seed`` and the names of what it draws for (e.g. variant, metric):
    ``default_rng([seed, crc32(name_1), ...])``. Each figure gets its own stream, so adding or
    reordering figures never changes another one's interval."""
    return rng_from(seed, *names)
