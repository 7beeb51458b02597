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


def test_first_stage_axis_needs_a_base_on_the_collection_axis(tmp_path: Path) -> None:
    row = {"axis": "first-stage", "base": "a", "id": "a-rm3", "name": "A, RM3"}
    _write(tmp_path, {"population": "p", "collections": [_coll(), _coll(**row)]})
    pop = load_population("p", tmp_path)
    assert [c.id for c in pop.on_axis()] == ["a"]
    assert [c.id for c in pop.on_axis("first-stage")] == ["a-rm3"]
    bad: list[tuple[list[dict], str]] = [
        ([_coll(), _coll(**{**row, "base": None})], "set it exactly when axis is first-stage"),
        ([_coll(base="a")], "set it exactly when axis is first-stage"),
        ([_coll(), _coll(**{**row, "base": "aa"})], "base 'aa'.*Did you mean 'a'"),
        (
            [_coll(), _coll(**row), _coll(**{**row, "id": "x", "base": "a-rm3"})],
            "base 'a-rm3', which is no collection",  # a first-stage row is no base
        ),
        ([_coll(), _coll(**{**row, "relevance_level": 2})], "relevance_level is 2, not 1"),
    ]
    for collections, match in bad:
        _write(tmp_path, {"population": "p", "collections": collections})
        with pytest.raises(ConfigError, match=match):
            load_population("p", tmp_path)


def test_zero_shot_shared() -> None:
    """Issue 35: every collection of ../shared/data no student trained on, read in place."""
    pop = load_population("zero-shot-shared", REPO)
    assert [c.id for c in pop.on_axis("collection")] == [
        "dl19", "dl21", "nfcorpus", "arguana", "cacm", "cisi", "med", "lisa", "time", "adi",
    ]  # fmt: skip
    trained_on = {"scifact", "vaswani", "npl", "hotpotqa", "noveleval"}
    assert not trained_on & {k for c in pop.collections for k in (c.id, *c.aliases)}
    first_stages = pop.on_axis("first-stage")
    assert [c.id for c in first_stages] == [
        "dl19-bm25-rm3", "dl19-splade-pp-ed", "dl19-tas-b", "dl19-ada2",
    ]  # fmt: skip
    dl19 = pop.get("dl19")
    dl19_qrels = "../shared/data/trec-dl19-passage/" + dl19.local[0].files["qrels"]
    for c in pop.collections:
        assert c.licence and c.queries and c.first_stage.reference["ndcg@10"] > 0
        assert "../shared/data/README.md" in c.first_stage.reference["source"]
        assert c.relevance_level == (2 if c.family == "trec-dl" else 1)
        (local,) = c.local
        assert local.path.startswith("../shared/data/") and local.layout in ("beir", "rankllm_json")
        assert "run" in local.files  # the shipped first stage: nothing is retrieved again
    for c in first_stages:
        qrels = Path(c.local[0].path, c.local[0].files["qrels"])
        assert c.base == "dl19" and Path(*_fold(qrels.parts)) == Path(dl19_qrels)
    assert (
        "non-commercial" in dl19.licence and "research use only" in pop.get("lisa").licence.lower()
    )


def _fold(parts: tuple[str, ...]) -> list[str]:
    """``a/b/../c`` -> ``a/c`` (leading ``..`` kept), without touching the file system."""
    out: list[str] = []
    for p in parts:
        if p == ".." and out and out[-1] != "..":
            out.pop()
        else:
            out.append(p)
    return out
