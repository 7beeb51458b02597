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
        axis: collection               # or first-stage: another first stage over `base`
        base: null                     # first-stage rows: the collection whose queries they share

``needs`` describes the declared route (Pyserini's prebuilt index and BM25): ``network`` and
``java`` for it, ``gated`` when the corpus needs a licence or an access request, ``manual`` when
a person has to obtain it. ``local`` lists copies already on disk that can be materialised
offline; each says which first stage its candidates came from. A task with
``data_source: local`` reads the first ``local`` copy in place (see
:mod:`presentation_dependence.reproduction.tasks`).

``axis`` separates the collections of a population from rows that re-rank another first stage
over a collection already listed (``base``: same queries, same judgements): an average over
collections takes :meth:`Population.on_axis` ``("collection")`` only.
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
    "Axis",
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
Axis = Literal["collection", "first-stage"]


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
    """The declared first stage: retriever, BM25 parameters and a reference figure.

    ``retriever``: ``pyserini`` is a Pyserini condition other than plain BM25 (RM3, SPLADE,
    a dense encoder; the label names it); ``none``: candidates as distributed, unscored.
    """

    retriever: Literal["pyserini-bm25", "pyserini", "bm25s", "none"]
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
    axis: Axis = "collection"
    base: str | None = None

    def __post_init__(self) -> None:
        if not self.id or "/" in self.id or " " in self.id:
            raise ConfigError(f"collection id {self.id!r} must be a non-empty token")
        if (self.axis == "first-stage") != (self.base is not None):
            raise ConfigError(
                f"collection {self.id!r}: 'base' names the collection a first-stage row "
                f"re-ranks; set it exactly when axis is first-stage (axis {self.axis!r}, "
                f"base {self.base!r})"
            )
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
        for c in self.collections:
            if c.base is not None:
                self._check_base(c)

    def _check_base(self, row: Collection) -> None:
        base = next((c for c in self.collections if c.id == row.base), None)
        if base is None or base.axis != "collection":
            names = [c.id for c in self.collections if c.axis == "collection"]
            raise ConfigError(
                f"population {self.population!r}: {row.id!r} has base {row.base!r}, which is "
                f"no collection of the population.{did_you_mean(str(row.base), names)}"
            )
        if base.relevance_level != row.relevance_level:
            raise ConfigError(
                f"population {self.population!r}: {row.id!r} shares the judgements of "
                f"{base.id!r} but its relevance_level is {row.relevance_level}, not "
                f"{base.relevance_level}"
            )

    def on_axis(self, axis: Axis = "collection") -> list[Collection]:
        """The collections on ``axis`` (an average over collections takes ``collection``)."""
        return [c for c in self.collections if c.axis == axis]

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
