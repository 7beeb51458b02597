"""Query splits that must not meet: training, held-out (λ selection) and test queries.

Two queries *overlap* when they have the same normalised text (lower-cased, whitespace runs
collapsed), or the same qid. Across the test set the qid rule is strict (any source), so a
held-out split can never share an id with a test query; between training and held-out queries
it applies within one source only (two collections may number their queries alike, e.g.
NovelEval "3" and SciFact "3"). ``docs/EVAL-PROTOCOL.md`` ("λ selection") states the rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from presentation_dependence.data import load_dataset
from presentation_dependence.data.config import DataConfig, data_block_at
from presentation_dependence.errors import ConfigError
from presentation_dependence.records import RerankRequest

__all__ = ["QueryRef", "SplitOverlapError", "check_disjoint", "load_split", "normalise_query"]

QueryRef = tuple[str, str, str]  # (source, qid, text)
JudgedQuery = tuple[str, RerankRequest, dict[str, int]]  # (source, request, qrels of the query)


class SplitOverlapError(ConfigError):
    """Two splits that must be disjoint share queries."""


def normalise_query(text: str) -> str:
    return " ".join(text.lower().split())


def load_queries(blocks: Sequence[DataConfig], where: str) -> list[JudgedQuery]:
    """``(source, request, judgements)`` of every query the data blocks give (``where``: the
    blocks' key in the config, e.g. ``splits.heldout``, named by errors)."""
    out: list[JudgedQuery] = []
    for i, block in enumerate(blocks):
        with data_block_at(f"{where}.{i}"):
            ds = load_dataset(block)
        judged = ds.qrels.judgements if ds.qrels is not None else {}
        out += [(ds.name, r, dict(judged.get(r.query.qid, {}))) for r in ds.requests]
    return out


def stratified_head(queries: Sequence[JudgedQuery], n: int | None) -> list[JudgedQuery]:
    """``n`` of ``queries``, each source's share proportional to its size (largest remainder;
    the first queries of each source, kept in their order); all of them when ``n`` is None or
    not smaller. So a capped held-out set still has every source, not only the first one."""
    if n is None or n >= len(queries):
        return list(queries)
    sizes: dict[str, int] = {}
    for src, _, _ in queries:
        sizes[src] = sizes.get(src, 0) + 1
    exact = {src: n * k / len(queries) for src, k in sizes.items()}
    take = {src: int(x) for src, x in exact.items()}
    by_remainder = sorted(
        sizes, key=lambda src: (-(exact[src] - take[src]), list(sizes).index(src))
    )
    for src in by_remainder[: n - sum(take.values())]:
        take[src] += 1
    out: list[JudgedQuery] = []
    for q in queries:
        if take[q[0]] > 0:
            out.append(q)
            take[q[0]] -= 1
    return out


def load_split(blocks: Sequence[DataConfig], where: str) -> list[QueryRef]:
    """``(source, qid, text)`` of every query the data blocks give."""
    return [(s, r.query.qid, r.query.text) for s, r, _ in load_queries(blocks, where)]


def overlaps(
    a: Sequence[QueryRef], b: Sequence[QueryRef], *, qid_scope: Literal["any", "source"] = "any"
) -> list[tuple[QueryRef, QueryRef, str]]:
    """Every pair (query of a, query of b, reason) that overlaps."""
    by_text: dict[str, QueryRef] = {normalise_query(t): (s, q, t) for s, q, t in b}
    by_qid = {((q,) if qid_scope == "any" else (s, q)): (s, q, t) for s, q, t in b}
    found = []
    for ref in a:
        s, q, t = ref
        other = by_qid.get((q,) if qid_scope == "any" else (s, q))
        if other is not None:
            found.append((ref, other, "same qid"))
            continue
        other = by_text.get(normalise_query(t))
        if other is not None:
            found.append((ref, other, "same query text"))
    return found


def check_disjoint(
    name_a: str,
    a: Sequence[QueryRef],
    name_b: str,
    b: Sequence[QueryRef],
    *,
    qid_scope: Literal["any", "source"] = "any",
) -> None:
    """Raise :class:`SplitOverlapError` naming the shared queries when ``a`` and ``b`` overlap."""
    found = overlaps(a, b, qid_scope=qid_scope)
    if not found:
        return
    shown = "; ".join(f"{x[0]}/{x[1]} ~ {y[0]}/{y[1]} ({why})" for x, y, why in found[:5])
    more = f" and {len(found) - 5} more" if len(found) > 5 else ""
    raise SplitOverlapError(
        f"{len(found)} {name_a} overlap the {name_b} queries: {shown}{more}. The {name_a} must be "
        f"disjoint from every {name_b} query (docs/EVAL-PROTOCOL.md, λ selection). Fix: drop "
        "those queries from one side, or rename qids that only collide by accident"
    )
