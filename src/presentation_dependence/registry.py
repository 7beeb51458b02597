"""One generic registry: register by name, look up with did-you-mean, refuse duplicates.

Compare lm-evaluation-harness ``lm_eval/api/registry.py`` and peft's ``register_peft_method``:
each scorer or loader registers itself in its own module; there is no second mapping to edit.

A registry also finds plugins that another distribution declares as packaging entry points
(PyTerrier's way): in that distribution's ``pyproject.toml``::

    [project.entry-points."presentation_dependence.rerankers"]
    EchoReranker = "my_package.echo:EchoReranker"

The entry points of a registry's group are loaded the first time a name is missing or the
names are listed; a loaded object that is not yet registered is registered under the entry
point's name. A plugin that fails to import is reported with the distribution and the error
when a lookup then misses. (A config's ``plugins:`` list imports modules the same way, for
code that is not installed as a distribution.)
"""

from __future__ import annotations

import difflib
import importlib.metadata
import types
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

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

    def __init__(self, kind: str, *, entry_points: str | None = None) -> None:
        self.kind = kind
        self.entry_points = entry_points  # the packaging entry-point group of its plugins
        self._items: dict[str, T] = {}
        self._loaded: set[str] = set()  # entry points imported (or failed) in this process
        self._failed: list[str] = []

    def _load_entry_points(self) -> None:
        """Import the group's entry points not imported yet (see the module docstring)."""
        if self.entry_points is None:
            return
        for ep in importlib.metadata.entry_points(group=self.entry_points):
            ident = f"{ep.name}={ep.value}"
            if ident in self._loaded:
                continue
            self._loaded.add(ident)
            try:
                obj: Any = ep.load()
            except Exception as e:  # a broken plugin must not break every other lookup
                dist = getattr(ep.dist, "name", "?")
                self._failed.append(f"{ep.name} ({dist}: {type(e).__name__}: {e})")
                continue
            if ep.name not in self._items and not isinstance(obj, types.ModuleType):
                self.register(ep.name)(obj)

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
        if name not in self._items:
            self._load_entry_points()
        try:
            return self._items[name]
        except KeyError:
            known = sorted(self._items)
            failed = "; ".join(self._failed)
            failed = f" Plugins that failed to load: {failed}." if failed else ""
            raise RegistryError(
                f"unknown {self.kind} {shown(name)}.{did_you_mean(name, known)} "
                f"Registered: {', '.join(known) or '(none)'}.{failed}",
                key=key,
            ) from None

    def names(self) -> list[str]:
        self._load_entry_points()
        return sorted(self._items)

    def __contains__(self, name: object) -> bool:
        if name not in self._items:
            self._load_entry_points()
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._items)
