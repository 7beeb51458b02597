"""The judge interface, its registry and the identity that keys caches.

A judge is built from its own options dataclass and answers judge requests::

    records = judge.judge(requests)                 # one JudgeRecord per request, same order
    records = judge.judge(requests, batch_size=4)   # the same, another batching (run_noise)

``identity()`` is what a cached verdict depends on: the model snapshot (a content hash or
pinned revision, never just a name), the prompt version (hash of the template text), the parser
version and the seed. The gate records it and derives its cache key from it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, ClassVar, Protocol, runtime_checkable

from presentation_dependence.judge.items.records import JudgeRecord, JudgeRequest
from presentation_dependence.registry import Registry

__all__ = ["JUDGES", "Judge", "JudgeIdentity", "JudgeOptions", "build_judge", "describe_judge"]


@dataclass(frozen=True)
class JudgeOptions:
    """Options every judge accepts; subclass to add a judge's own."""


@dataclass(frozen=True)
class JudgeIdentity:
    """Everything a cached verdict depends on."""

    judge_class: str
    model_snapshot: str
    prompt_version: str
    parser_version: str
    seed: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def cache_key(self) -> str:
        """sha256 (first 24 hex) of the identity's canonical JSON."""
        blob = json.dumps(self.to_dict(), sort_keys=True).encode("utf-8")
        return hashlib.sha256(blob).hexdigest()[:24]


@runtime_checkable
class Judge(Protocol):
    """What the judge runner, ``run_noise`` and the gate need."""

    config_cls: ClassVar[type[JudgeOptions]]

    def judge(
        self,
        requests: Sequence[JudgeRequest],
        *,
        batch_size: int | None = None,
        one_at_a_time: bool | None = None,
    ) -> list[JudgeRecord]:
        """One record per request, in request order. ``batch_size``/``one_at_a_time`` override
        the judge's own batching for this call (None = the configured one)."""
        ...

    def identity(self) -> JudgeIdentity: ...

    def describe(self) -> dict[str, Any]: ...


JUDGES: Registry[type[Judge]] = Registry(
    "judge_class", entry_points="presentation_dependence.judges"
)


def build_judge(name: str, options: JudgeOptions | None = None) -> Judge:
    """Instantiate the judge registered as ``name`` (its ``__init__`` checks ``options``)."""
    return JUDGES.get(name)(options)  # type: ignore[call-arg]


def describe_judge(
    judge_class: str, identity: JudgeIdentity, options: JudgeOptions, **extra: Any
) -> dict[str, Any]:
    """What a judge's ``describe()`` returns: its class, its identity, ``extra``, its options."""
    return {"judge_class": judge_class, **identity.to_dict(), **extra, "options": asdict(options)}
