"""A PyTerrier transformer around any reranker of this package (the ``pyterrier`` extra).

::

    import pyterrier as pt
    import presentation_dependence as pd
    from presentation_dependence.interop.pyterrier import readout_transformer

    readout = readout_transformer(pd.build_reranker("GradeReranker", chunk_size=20))
    pipeline = bm25 >> pt.text.get_text(dataset, "text") >> readout
    pt.Experiment([bm25, pipeline], topics, qrels, eval_metrics=["ndcg_cut_10"])

The input is a PyTerrier result frame with ``qid``, ``query``, ``docno`` and the passage text
(column ``text`` by default). Each query's rows are handed to the reranker in their input order
(by ``rank`` when the frame has one, else row order) as one list, exactly as ``presdep run``
hands a first stage's candidates. The output has the same rows and columns with ``score`` the
reranker's score and ``rank`` its 0-based rank (ties broken as in
:meth:`~presentation_dependence.records.RankResult.from_scores`: first-stage rank, then input
position), sorted by query (first appearance) and rank.
"""

from __future__ import annotations

import math
from typing import Any

from presentation_dependence.optional import import_optional
from presentation_dependence.records import Candidate, Query
from presentation_dependence.rerankers.base import Reranker

__all__ = ["readout_transformer"]


def readout_transformer(reranker: Reranker, *, text_field: str = "text") -> Any:
    """A ``pt.Transformer`` that reranks each query's rows with ``reranker``."""
    pt = import_optional("pyterrier", extra="pyterrier", purpose="the PyTerrier transformer")
    pd = import_optional("pandas", extra="pyterrier", purpose="the PyTerrier transformer")

    base: Any = pt.Transformer

    class ReadoutTransformer(base):
        def __init__(self) -> None:
            super().__init__()
            self.reranker = reranker
            self.text_field = text_field

        def __repr__(self) -> str:
            return f"ReadoutTransformer({self.reranker.describe().get('reranker_class')})"

        def transform(self, inp: Any) -> Any:
            missing = {"qid", "query", "docno", self.text_field} - set(inp.columns)
            if missing:
                raise ValueError(
                    f"ReadoutTransformer needs the columns qid, query, docno and "
                    f"{self.text_field}; missing {sorted(missing)} (add the text with "
                    "pt.text.get_text(dataset, 'text'))"
                )
            if inp.empty:
                return inp.assign(score=pd.Series(dtype=float), rank=pd.Series(dtype=int))
            frames = []
            for qid, group in inp.groupby("qid", sort=False):
                rows = group.sort_values("rank", kind="stable") if "rank" in group else group
                first = rows["score"].tolist() if "score" in rows else [math.nan] * len(rows)
                cands = [
                    Candidate(str(d), str(t), rank=i + 1, score=float(s))
                    for i, (d, t, s) in enumerate(
                        zip(rows["docno"], rows[self.text_field], first, strict=True)
                    )
                ]
                res = self.reranker.rank(Query(str(qid), str(rows["query"].iloc[0])), cands)
                rows = rows.assign(
                    score=[it.score for it in res.items], rank=[it.rank - 1 for it in res.items]
                )
                frames.append(rows.sort_values("rank", kind="stable"))
            return pd.concat(frames, ignore_index=True)

    return ReadoutTransformer()
