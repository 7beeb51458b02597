"""A PyTerrier pipeline ``first stage >> readout``; skipped without the 'pyterrier' extra."""

from __future__ import annotations

from pathlib import Path

import pytest

pt = pytest.importorskip("pyterrier", reason="needs the 'pyterrier' extra (python-terrier)")
pandas = pytest.importorskip("pandas", reason="needs the 'pyterrier' extra (pandas)")

import presentation_dependence as pd  # noqa: E402
from presentation_dependence.data.smoke import build_smoke_fixture  # noqa: E402
from presentation_dependence.interop.pyterrier import readout_transformer  # noqa: E402
from presentation_dependence.io.fixture import read_fixture  # noqa: E402


def test_first_stage_then_readout_pipeline(tmp_path: Path, tiny_model: str) -> None:
    requests, qrels = read_fixture(build_smoke_fixture(tmp_path, num_queries=3, num_candidates=8))
    first_stage = pandas.DataFrame(
        [
            {
                "qid": r.query.qid,
                "query": r.query.text,
                "docno": c.docid,
                "text": c.text,
                "score": c.score,
                "rank": c.rank - 1,
            }
            for r in requests
            for c in r.candidates
        ]
    )
    source = pt.Transformer.from_df(first_stage)
    reranker = pd.build_reranker(
        "GradeReranker", model_name=tiny_model, chunk_size=8, device="cpu", dtype="float32"
    )
    pipeline = source >> readout_transformer(reranker)
    topics = first_stage[["qid", "query"]].drop_duplicates()
    out = pipeline(topics)

    direct = [reranker.rank(r.query, list(r.candidates)) for r in requests]
    for res in direct:
        rows = out[out["qid"] == res.query.qid]
        assert rows["docno"].tolist() == [it.candidate.docid for it in res.ranked()]
        assert rows["rank"].tolist() == list(range(len(rows)))
        assert rows["score"].tolist() == [it.score for it in res.ranked()]

    # PyTerrier's own evaluation of the pipeline agrees with this package's.
    qrels_df = pandas.DataFrame(
        [
            {"qid": q, "docno": d, "label": g}
            for q, docs in qrels.judgements.items()
            for d, g in docs.items()
        ]
    )
    table = pt.Experiment([pipeline], topics, qrels_df, eval_metrics=["ndcg_cut_10"])
    ours = pd.evaluate_run(pd.Run.from_results(direct), qrels, pd.EvalConfig(measures=["ndcg@10"]))
    assert table["ndcg_cut_10"].iloc[0] == pytest.approx(ours["mean"]["ndcg@10"], abs=1e-9)


def test_missing_text_column_is_explained() -> None:
    readout = readout_transformer(pd.build_reranker("IdentityReranker"))
    with pytest.raises(ValueError, match="get_text"):
        readout(pandas.DataFrame([{"qid": "1", "query": "q", "docno": "d"}]))
