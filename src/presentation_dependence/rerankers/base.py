"""The reranker interface and its registry.

A reranker is constructed from its own config dataclass and has one job::

    result = reranker.rank(query, candidates)   # -> RankResult, input identity and order kept

Every reranker module registers its class with ``@RERANKERS.register()`` and names its config
dataclass in ``config_cls``; unknown config keys are errors. ``paradigm`` declares how the
scores arise, which later analyses use (a pointwise scorer is order-free by construction).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, runtime_checkable

from presentation_dependence.errors import ConfigError, RegistryError, shown
from presentation_dependence.fields import build_dataclass, to_plain
from presentation_dependence.presentations import Ranker
from presentation_dependence.registry import Registry

__all__ = [
    "GRADE_SCALE_PARADIGMS",
    "RERANKERS",
    "Paradigm",
    "Reranker",
    "RerankerConfig",
    "RerankerOptions",
    "block_paradigm",
    "build_reranker",
    "reranker_block",
]


class Paradigm(str, enum.Enum):
    """How a reranker's scores come about."""

    IDENTITY = "identity"  # returns the first-stage order
    POINTWISE = "pointwise"  # one candidate per forward pass: order-free by construction
    LISTWISE_READOUT = "listwise-readout"  # B candidates per prompt, grades read at fixed slots
    GENERATIVE_LISTWISE = "generative-listwise"  # the model writes a permutation
    MITIGATION = "mitigation"  # wraps another reranker (BSC, CapCal, ...)


#: Paradigms whose scores are expected grades on the 0-3 scale (the readout, and the mitigations
#: around it). The others score on a scale of their own (a bi-encoder's cosines, 1 / rank).
GRADE_SCALE_PARADIGMS = (Paradigm.LISTWISE_READOUT, Paradigm.MITIGATION)


@dataclass(frozen=True)
class RerankerOptions:
    """Options every reranker accepts. Subclass it to add a reranker's own fields."""

    def __post_init__(self) -> None:
        pass


@runtime_checkable
class Reranker(Ranker, Protocol):
    """What the runners need from a reranker: ``rank`` (the
    :class:`~presentation_dependence.presentations.Ranker` that scoring under presentations
    needs), ``describe``, its paradigm and its options class."""

    paradigm: ClassVar[Paradigm]
    config_cls: ClassVar[type[RerankerOptions]]

    def describe(self) -> dict[str, Any]:
        """What provenance.json records about this reranker (model revision, dtype, ...)."""
        ...


RERANKERS: Registry[type[Reranker]] = Registry(
    "reranker_class", entry_points="presentation_dependence.rerankers"
)


def block_paradigm(block: Any) -> Paradigm | None:
    """The paradigm of the reranker that a config's ``reranker`` block (plain data, as a run
    folder's resolved_config.yaml holds it) names; None when it names no registered reranker."""
    name = block.get("reranker_class") if isinstance(block, Mapping) else None
    if not isinstance(name, str) or name not in RERANKERS:
        return None
    return Paradigm(RERANKERS.get(name).paradigm)


@dataclass(frozen=True)
class RerankerConfig:
    """A config's ``reranker`` block: ``reranker_class`` plus that class's own options (flat).

    The name is looked up when the block is built, so a config naming an unregistered reranker
    fails at load with a did-you-mean.
    """

    reranker_class: str = "IdentityReranker"
    options: RerankerOptions = field(default_factory=RerankerOptions)

    @classmethod
    def from_raw(cls, raw: Mapping[str, Any]) -> RerankerConfig:
        if not isinstance(raw, Mapping):
            raise ConfigError(f"reranker: expected a mapping, got {shown(raw)}", key="reranker")
        raw = dict(raw)
        name = raw.pop("reranker_class", "IdentityReranker")
        name = name if isinstance(name, str) else shown(name)  # unknown: named, bounded
        rcls = RERANKERS.get(name, key="reranker.reranker_class")
        return cls(str(name), build_dataclass(rcls.config_cls, raw, "reranker"))

    def to_plain(self) -> dict[str, Any]:
        return {"reranker_class": self.reranker_class, **to_plain(self.options)}


def reranker_block(raw: Any, key: str) -> dict[str, Any]:
    """Validate a nested reranker block (a base, a teacher, a student) named ``key``; return it
    as a plain dict with every default filled in."""
    if not isinstance(raw, Mapping):
        raise ConfigError(
            f"{key}: expected a reranker block (a mapping), got {shown(raw)}", key=key
        )
    if "reranker_class" not in raw:
        raise ConfigError(
            f"{key}: the reranker block needs reranker_class (e.g. GradeReranker)", key=key
        )
    try:
        return RerankerConfig.from_raw(raw).to_plain()
    except (RegistryError, ConfigError) as e:
        raise ConfigError(f"{key}: {e}", key=key) from None


def build_reranker(name: str, options: RerankerOptions | None = None, **fields: Any) -> Reranker:
    """Instantiate the reranker registered as ``name`` with its options.

    ``options`` is the reranker's options dataclass; or give its fields as keywords, e.g.
    ``build_reranker("GradeReranker", chunk_size=10, device="cpu")`` (checked as a config block).
    """
    cls = RERANKERS.get(name)
    if fields:
        if options is not None:
            raise TypeError("give either options or keyword fields, not both")
        options = build_dataclass(cls.config_cls, fields, name)
    opts = options if options is not None else cls.config_cls()
    if not isinstance(opts, cls.config_cls):
        raise TypeError(f"{name} takes {cls.config_cls.__name__}, got {type(opts).__name__}")
    return cls(opts)  # type: ignore[call-arg]
