"""A rank_llm-compatible model coordinator: any reranker of this package inside rank_llm.

rank_llm's ``Reranker(model_coordinator)`` calls ``model_coordinator.rerank_batch(requests,
rank_start, rank_end, shuffle_candidates, logging, **kwargs)`` and expects ``Result`` objects
back. :class:`RankLLMCoordinator` answers that call with a reranker of this package (the
expected-grade readout, a student, ...)::

    from rank_llm.rerank.reranker import Reranker
    from presentation_dependence.interop.rank_llm import RankLLMCoordinator

    reranker = Reranker(RankLLMCoordinator(pd.build_reranker("GradeReranker", chunk_size=20)))
    results = reranker.rerank_batch(requests)   # rank_llm Request -> Result, as with RankZephyr

Candidates ``[rank_start:rank_end]`` are scored in one call of the wrapped reranker and put in
score order (ties by input position); those outside the window keep their place. Every candidate
of the window gets the reranker's score; the doc text is read as
:mod:`presentation_dependence.io.rankllm_json` reads it. ``shuffle_candidates`` shuffles the
window first, seeded by ``seed`` and the query id. rank_llm itself is imported on first use (the
``rankllm`` extra, then ``pip install --no-deps 'rank-llm>=0.20'``: rank-llm declares vLLM, a
CUDA torch of about 10 GB, that its ``Request``/``Result`` types do not need). rank_llm's own
``Reranker`` class imports vLLM, so without it call the coordinator directly, as that class
would: ``RankLLMCoordinator(...).rerank_batch(requests)`` returns the same ``Result`` objects.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from presentation_dependence.io.rankllm_json import doc_text
from presentation_dependence.optional import import_optional
from presentation_dependence.presentations import draw_orders
from presentation_dependence.records import Candidate, Query
from presentation_dependence.rerankers.base import Reranker

__all__ = ["RankLLMCoordinator"]


class RankLLMCoordinator:
    """rank_llm's model-coordinator interface around a :class:`~presentation_dependence.rerankers.base.Reranker`."""

    def __init__(self, reranker: Reranker, *, seed: int = 0, name: str | None = None) -> None:
        self.reranker = reranker
        self.seed = seed
        self.name = name or str(reranker.describe().get("reranker_class", "presdep"))

    def _result_cls(self) -> Any:
        data = import_optional("rank_llm.data", extra="rankllm", purpose="the rank_llm adapter")
        return data.Result

    def rerank_batch(
        self,
        requests: Sequence[Any],
        rank_start: int = 0,
        rank_end: int = 100,
        shuffle_candidates: bool = False,
        logging: bool = False,
        **kwargs: Any,
    ) -> list[Any]:
        """rank_llm ``Request`` objects in, ``Result`` objects out (window ``[rank_start:rank_end]``)."""
        result_cls = self._result_cls()
        return [
            self._one(r, rank_start, rank_end, shuffle_candidates, result_cls) for r in requests
        ]

    def rerank(self, request: Any, rank_start: int = 0, rank_end: int = 100, **kwargs: Any) -> Any:
        return self.rerank_batch([request], rank_start, rank_end, **kwargs)[0]

    def get_output_filename(
        self,
        top_k_candidates: int,
        dataset_name: str | None = None,
        shuffle_candidates: bool = False,
        **kwargs: Any,
    ) -> str:
        """The stem rank_llm's ``Reranker.write_rerank_results`` names its files with."""
        parts = [self.name, str(top_k_candidates), *([dataset_name] if dataset_name else [])]
        return "_".join([*parts, *(["shuffled"] if shuffle_candidates else [])])

    def _one(self, request: Any, start: int, end: int, shuffle: bool, result_cls: Any) -> Any:
        qid = str(request.query.qid)
        cands = list(request.candidates)
        window = cands[start:end]
        if shuffle:
            order = draw_orders(len(window), qid, num_orders=1, seed=self.seed)[0]
            window = [window[i] for i in order]
        if window:
            ours = [
                Candidate(str(c.docid), doc_text(c.doc), rank=i + 1) for i, c in enumerate(window)
            ]
            res = self.reranker.rank(Query(qid, str(request.query.text)), ours)
            reranked = []
            for item in res.ranked():
                cand = copy.copy(window[item.input_index])
                cand.score = float(item.score)
                reranked.append(cand)
            window = reranked
        return result_cls(
            query=copy.copy(request.query),
            candidates=[*cands[:start], *window, *cands[end:]],
            invocations_history=[],
        )
