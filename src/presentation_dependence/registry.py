"""One generic registry: register by name, look up with did-you-mean, refuse duplicates.

Compare lm-evaluation-harness ``lm_eval/api/registry.py`` and peft's ``register_peft_method``:
each scorer or loader registers itself in its own module; there is no second mapping to edit.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from presentation_dependence.errors import RegistryError, shown

T = TypeVar("T")

__all__ = ["Registry", "did_you_mean"]


def did_you_mean(name: str, choices: list[str]) -> str:
    """A ' Did you mean ...?' suffix naming the closest choices, or '' (also for a name that is
    not a string, or too long to be a typo of one)."""
    if not isinstance(name, str) or len(name) > 200:
        return ""
    close = difflib.get_close_matches(name, choices, n=3, cutoff=0.5)
    if not close:
        lowered = {c.lower(): c for c in choices}
        close = [lowered[c] for c in difflib.get_close_matches(name.lower(), list(lowered), n=3)]
    return f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""


class Registry(Generic[T]):
    """Named objects of one kind (reranker classes, data loaders, ...)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}

    def register(self, name: str | None = None) -> Callable[[T], T]:
        """Decorator: register the decorated object under ``name`` (default: its ``__name__``)."""

        def deco(obj: T) -> T:
            key = name or getattr(obj, "__name__", None)
            if not key:
                raise RegistryError(f"cannot register a {self.kind} without a name")
            if key in self._items and self._items[key] is not obj:
                raise RegistryError(
                    f"{self.kind} {key!r} is already registered (by "
                    f"{getattr(self._items[key], '__module__', '?')}); pick another name"
                )
            self._items[key] = obj
            return obj

        return deco

    def get(self, name: str, *, key: str | None = None) -> T:
        """The object registered as ``name``; ``key``: the config key that named it, if any."""
        try:
            return self._items[name]
        except KeyError:
            known = sorted(self._items)
            raise RegistryError(
                f"unknown {self.kind} {shown(name)}.{did_you_mean(name, known)} "
                f"Registered: {', '.join(known) or '(none)'}",
                key=key,
            ) from None

    def names(self) -> list[str]:
        return sorted(self._items)

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._items)
