"""Population YAMLs: the shipped ones load and declare what the issue asks; bad ones fail clearly."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from presentation_dependence.errors import ConfigError
from presentation_dependence.reproduction.populations import (
    list_populations,
    load_population,
)

REPO = Path(__file__).resolve().parents[2]


def test_reranking_primary_18() -> None:
    pop = load_population("reranking-primary-18", REPO)
    assert pop.ids() == [
        "dl19", "dl20", "dl21", "dl22", "dl23",
        "trec-covid", "nfcorpus", "fiqa", "touche2020", "arguana", "climate-fever", "dbpedia",
        "scifact", "signal1m", "trec-news", "robust04",
        "legal-a", "legal-b",
    ]  # fmt: skip
    for c in pop.collections:
        assert c.licence and c.first_stage.label
        if c.family == "trec-dl":
            assert c.source.pyserini is not None and c.relevance_level == 2
        if c.family == "beir":
            assert c.source.pyserini is not None
            assert c.source.pyserini.index.endswith(".flat") and c.first_stage.remove_query
            assert (c.first_stage.k1, c.first_stage.b) == (0.9, 0.4)
    # MS MARCO-tuned BM25 for TREC DL on v1, flat BM25 for BEIR
    assert (pop.get("dl19").first_stage.k1, pop.get("dl19").first_stage.b) == (0.82, 0.68)
    assert {c.id for c in pop.collections if not c.distributed} == {"legal-a", "legal-b"}
    assert {c.id for c in pop.collections if c.needs.gated} == {"signal1m", "trec-news", "robust04"}
    assert pop.get("beir-scifact").id == "scifact" and "CC BY-NC" in pop.get("scifact").licence


def test_shipped_populations_all_load() -> None:
    names = list_populations(REPO)
    assert {"reranking-primary-18", "local-shared"} <= set(names)
    for name in names:
        load_population(name, REPO)


def test_lookup_did_you_mean() -> None:
    pop = load_population("reranking-primary-18", REPO)
    with pytest.raises(ConfigError, match="Did you mean 'scifact'"):
        pop.get("scifct")
    with pytest.raises(ConfigError, match="Did you mean 'reranking-primary-18'"):
        load_population("reranking-primary-1", REPO)


def _write(root: Path, doc: dict, name: str = "p") -> None:
    d = root / "configs" / "reproduction" / "populations"
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{name}.yaml").write_text(yaml.safe_dump(doc))


def _coll(**kw: object) -> dict:
    c = {
        "id": "a",
        "name": "A",
        "family": "beir",
        "data_dir": "a",
        "licence": "x",
        "source": {"homepage": "h"},
        "first_stage": {"retriever": "bm25s", "label": "b"},
    }
    c.update(kw)
    return c


@pytest.mark.parametrize(
    ("coll", "match"),
    [
        ({"licnce": "x"}, "Did you mean 'licence'"),
        ({"family": "web"}, "family"),
        (
            {"first_stage": {"retriever": "pyserini-bm25", "label": "b"}},
            "pyserini-bm25 needs k1 and b",
        ),
        ({"source": {}}, "distributed but has no source"),
        ({"local": [{"path": "p", "layout": "zip", "first_stage": "x"}]}, "local"),
    ],
)
def test_bad_collections(tmp_path: Path, coll: dict, match: str) -> None:
    _write(tmp_path, {"population": "p", "collections": [_coll(**coll)]})
    with pytest.raises(ConfigError, match=match):
        load_population("p", tmp_path)


def test_duplicates_and_stem(tmp_path: Path) -> None:
    _write(tmp_path, {"population": "p", "collections": [_coll(), _coll(id="b", aliases=["a"])]})
    with pytest.raises(ConfigError, match="'a' names both"):
        load_population("p", tmp_path)
    _write(tmp_path, {"population": "other", "collections": [_coll()]})
    with pytest.raises(ConfigError, match="must equal the file stem"):
        load_population("p", tmp_path)
