"""Populations: the named sets of collections a task runs over (``configs/reproduction/populations``).

A population YAML is validated strictly (unknown keys are errors with a did-you-mean)::

    population: reranking-primary-18
    description: ...
    collections:
      - id: dl19                       # short id, used in job and config names
        name: TREC DL 2019 (passage)
        family: trec-dl                # trec-dl | beir | legal
        data_dir: trec-dl19-passage    # data/<data_dir>/ is where `run` materialises it
        licence: ...
        distributed: true              # false: the authors never released it
        needs: {network: true, java: true, gated: false, manual: false}
        source: {pyserini: {index: ..., topics: ..., qrels: ...}, ir_datasets: ..., beir_url: ...}
        first_stage: {retriever: pyserini-bm25, k1: 0.82, b: 0.68, label: ..., depth: 100}
        local: [{path: ../shared/data/trec-dl19-passage, layout: rankllm_json, files: {...}}]

``needs`` describes the declared route (Pyserini's prebuilt index and BM25): ``network`` and
``java`` for it, ``gated`` when the corpus needs a licence or an access request, ``manual`` when
a person has to obtain it. ``local`` lists copies already on disk that can be materialised
offline; each says which first stage its candidates came from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from presentation_dependence.config.loader import list_named, load_config, named_config_path
from presentation_dependence.errors import ConfigError
from presentation_dependence.fields import build_dataclass
from presentation_dependence.registry import did_you_mean

__all__ = [
    "POPULATIONS_DIR",
    "Collection",
    "FirstStage",
    "LocalCopy",
    "Needs",
    "Population",
    "PyseriniSource",
    "Source",
    "list_populations",
    "load_population",
]

POPULATIONS_DIR = Path("configs/reproduction/populations")
Family = Literal["trec-dl", "beir", "legal", "other"]


@dataclass(frozen=True)
class PyseriniSource:
    """A Pyserini prebuilt index with its named topics and qrels."""

    index: str
    topics: str
    qrels: str


@dataclass(frozen=True)
class Source:
    """Where a collection comes from; every route is optional."""

    pyserini: PyseriniSource | None = None
    ir_datasets: str | None = None
    beir_url: str | None = None
    homepage: str | None = None


@dataclass(frozen=True)
class Needs:
    """What the declared route needs."""

    network: bool = False
    java: bool = False
    gated: bool = False
    manual: bool = False


@dataclass(frozen=True)
class FirstStage:
    """The declared first stage: retriever, BM25 parameters and a published reference figure."""

    retriever: Literal["pyserini-bm25", "bm25s", "none"]
    label: str
    k1: float | None = None
    b: float | None = None
    depth: int = 100
    remove_query: bool = False
    reference: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.depth < 1:
            raise ConfigError(f"first_stage.depth must be >= 1, got {self.depth}")
        if self.retriever == "pyserini-bm25" and (self.k1 is None or self.b is None):
            raise ConfigError("first_stage: pyserini-bm25 needs k1 and b")


@dataclass(frozen=True)
class LocalCopy:
    """A copy on disk: a BEIR folder (needs a first stage) or a ready candidate list."""

    path: str
    layout: Literal["beir", "rankllm_json", "fixture"]
    first_stage: str
    files: dict[str, str] = field(default_factory=dict)

    def exists(self, root: Path) -> bool:
        base = root / self.path
        return base.is_dir() and all((base / f).is_file() for f in self.files.values())


@dataclass(frozen=True)
class Collection:
    """One collection of a population."""

    id: str
    name: str
    family: Family
    data_dir: str
    licence: str
    first_stage: FirstStage
    distributed: bool = True
    needs: Needs = field(default_factory=Needs)
    source: Source = field(default_factory=Source)
    local: list[LocalCopy] = field(default_factory=list)
    aliases: list[str] = field(default_factory=list)
    queries: int | None = None
    relevance_level: int = 1
    notes: str = ""

    def __post_init__(self) -> None:
        if not self.id or "/" in self.id or " " in self.id:
            raise ConfigError(f"collection id {self.id!r} must be a non-empty token")
        if self.distributed and self.source == Source() and not self.local:
            raise ConfigError(
                f"collection {self.id!r}: distributed but has no source or local copy"
            )

    def first_local(self, root: Path) -> LocalCopy | None:
        return next((c for c in self.local if c.exists(root)), None)


@dataclass(frozen=True)
class Population:
    """A named, ordered set of collections."""

    population: str
    collections: list[Collection]
    description: str = ""

    def __post_init__(self) -> None:
        seen: dict[str, str] = {}
        for c in self.collections:
            for key in (c.id, *c.aliases):
                if key in seen:
                    raise ConfigError(
                        f"population {self.population!r}: {key!r} names both "
                        f"{seen[key]!r} and {c.id!r}"
                    )
                seen[key] = c.id

    def ids(self) -> list[str]:
        return [c.id for c in self.collections]

    def get(self, key: str) -> Collection:
        """A collection by id or alias (did-you-mean on a typo)."""
        for c in self.collections:
            if key == c.id or key in c.aliases:
                return c
        names = self.ids() + [a for c in self.collections for a in c.aliases]
        raise ConfigError(
            f"population {self.population!r} has no collection {key!r}.{did_you_mean(key, names)} "
            f"Collections: {', '.join(self.ids())}"
        )

    def select(self, keys: list[str] | None) -> list[Collection]:
        return list(self.collections) if not keys else [self.get(k) for k in keys]


def load_population(name_or_path: str | Path, root: str | Path = ".") -> Population:
    """Load ``configs/reproduction/populations/<name>.yaml`` (or a path) strictly."""
    path = named_config_path("population", POPULATIONS_DIR, name_or_path, root)

    def build(raw: dict[str, Any], stem: str) -> Population:
        if not isinstance(raw.get("collections"), list) or not raw["collections"]:
            raise ConfigError("'collections' must be a non-empty list", key="collections")
        pop = build_dataclass(Population, raw)
        if pop.population != stem:
            raise ConfigError(
                f"'population' is {pop.population!r}; it must equal the file stem", key="population"
            )
        return pop

    return load_config(path, build, family="population")


def list_populations(root: str | Path = ".") -> list[str]:
    return list_named(POPULATIONS_DIR, root)
