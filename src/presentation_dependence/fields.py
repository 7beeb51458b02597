"""Config dataclass fields: ``opt(default, help)``, strict construction from plain dicts (YAML).

Every config block of every family (experiment, training, judge, reader, reproduction) and
every reranker's options are frozen dataclasses built by :func:`build_dataclass`, so unknown
keys and ill-typed values fail the same way everywhere; :func:`opt` is the one field helper.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import field
from typing import Any, TypeVar

from presentation_dependence.errors import ConfigError, shown
from presentation_dependence.registry import did_you_mean

T = TypeVar("T")

__all__ = [
    "build_dataclass",
    "check_counts",
    "check_type",
    "checked_options",
    "opt",
    "to_plain",
]


def opt(default: Any, help_: str) -> Any:
    """A dataclass field with a default and the ``help`` text the schema docs show."""
    return field(default=default, metadata={"help": help_})


def req(help_: str) -> Any:
    """A required dataclass field (no default) with the ``help`` text the schema docs show."""
    return field(metadata={"help": help_})


def opt_factory(factory: Callable[[], Any], help_: str) -> Any:
    """:func:`opt` for a mutable default (a sub-block, a list): ``factory()`` makes it."""
    return field(default_factory=factory, metadata={"help": help_})


def checked_options(owner: object, options: Any, cls: type[T]) -> T:
    """What a reranker's or judge's ``__init__`` takes: ``options`` (None: the owner's
    ``config_cls()``), checked to be a ``cls``."""
    opts = options if options is not None else getattr(owner, "config_cls", cls)()
    if not isinstance(opts, cls):
        raise TypeError(f"{type(owner).__name__} takes {cls.__name__}, got {shown(opts)}")
    return opts


def check_counts(obj: object, *names: str, nullable: bool = False, minimum: int = 1) -> None:
    """Each field ``name`` of ``obj`` is an integer >= ``minimum`` (or null, where
    ``nullable``)."""
    for name in names:
        v = getattr(obj, name)
        if not (v is None and nullable) and (
            isinstance(v, bool) or not isinstance(v, int) or v < minimum
        ):
            null = " or null" if nullable else ""
            raise ConfigError(f"{name} must be an integer >= {minimum}{null}, got {shown(v)}")


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


def check_type(value: Any, tp: Any, key: str) -> Any:
    """Validate (and lightly coerce) ``value`` against the annotation ``tp``.

    Coercions: int -> float, list -> tuple for tuple fields. Anything else that does not match
    raises :class:`ConfigError` naming the key.
    """
    origin = typing.get_origin(tp)
    if tp is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        return _check_union(value, tp, key)
    if tp is type(None):
        if value is None:
            return None
        raise ConfigError(f"{key}: expected null, got {shown(value)}", key=key)
    if origin is typing.Literal:
        return _check_literal(value, tp, key)
    if origin in (list, tuple):
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{key}: expected a list, got {shown(value)}", key=key)
        args = typing.get_args(tp)
        item_tp = args[0] if args else Any
        items = [check_type(v, item_tp, f"{key}[{i}]") for i, v in enumerate(value)]
        return tuple(items) if origin is tuple else items
    if origin is dict:
        if not isinstance(value, Mapping):
            raise ConfigError(f"{key}: expected a mapping, got {shown(value)}", key=key)
        return dict(value)
    if tp in (float, int, bool, str):
        return _check_scalar(value, tp, key)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if not isinstance(value, Mapping):
            raise ConfigError(
                f"{key}: expected a mapping of {tp.__name__} fields, got {shown(value)}", key=key
            )
        return build_dataclass(tp, value, key)
    return value


def _check_union(value: Any, tp: Any, key: str) -> Any:
    """``value`` as the first member of the union ``tp`` it is valid as."""
    for arg in typing.get_args(tp):
        try:
            return check_type(value, arg, key)
        except ConfigError:
            continue
    raise ConfigError(f"{key}: {shown(value)} is not a valid {_type_name(tp)}", key=key)


def _check_literal(value: Any, tp: Any, key: str) -> Any:
    """``value`` when it is one of the literal's choices; else an error suggesting the nearest."""
    if value in typing.get_args(tp):
        return value
    choices = [str(a) for a in typing.get_args(tp)]
    raise ConfigError(
        f"{key}: {shown(value)} is not one of {', '.join(choices)}.{did_you_mean(value, choices)}",
        key=key,
    )


_SCALARS = {float: "a number", int: "an integer", bool: "true or false", str: "a string"}


def _check_scalar(value: Any, tp: type, key: str) -> Any:
    """A number, integer, boolean or string; an integer passes as a number (made a float), a
    boolean never passes as either."""
    kinds = (int, float) if tp is float else tp
    valid = isinstance(value, kinds) and (tp is bool or not isinstance(value, bool))
    if not valid:
        raise ConfigError(f"{key}: expected {_SCALARS[tp]}, got {shown(value)}", key=key)
    return float(value) if tp is float else value


def build_dataclass(cls: type[T], raw: Mapping[str, Any], prefix: str = "") -> T:
    """Build ``cls`` from ``raw``; unknown keys and ill-typed values raise :class:`ConfigError`."""
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{prefix or 'config'}: expected a mapping, got {shown(raw)}")
    assert dataclasses.is_dataclass(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    hints = typing.get_type_hints(cls)
    kwargs: dict[str, Any] = {}
    for k, v in raw.items():
        key = f"{prefix}.{k}" if prefix else str(k)
        if k not in fields:
            raise ConfigError(
                f"unknown config key {key!r}.{did_you_mean(str(k), list(fields))} "
                f"Valid keys{' of ' + prefix if prefix else ''}: {', '.join(fields)}",
                key=key,
            )
        kwargs[k] = check_type(v, hints[k], key)
    try:
        return cls(**kwargs)
    except TypeError as e:  # a required field is missing
        raise ConfigError(f"{prefix or 'config'}: {e}", key=prefix or None) from None
    except ConfigError as e:  # a check of the block's __post_init__: point at the block
        e.key = e.key or prefix or None
        raise


def to_plain(obj: Any) -> Any:
    """Dataclasses, tuples and mappings to plain YAML-safe dicts and lists."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, Mapping):
        return {str(k): to_plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_plain(v) for v in obj]
    return obj
