"""TREC runs, qrels and topics: round trips, trec_eval order, tie-safe scores, strict errors."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from presentation_dependence.errors import InputFormatError
from presentation_dependence.io.trec import (
    read_qrels,
    read_run,
    read_topics,
    write_qrels,
    write_run,
    write_topics,
)
from presentation_dependence.records import Qrels, Run, RunEntry, Topics


def _file(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _raises_at(
    path: Path, line: int | None, reader: Callable[..., object], *args: Any, **kwargs: Any
) -> InputFormatError:
    with pytest.raises(InputFormatError) as e:
        reader(path, *args, **kwargs)
    assert e.value.line == line
    assert str(path) in str(e.value)
    assert "Fix:" in str(e.value)
    return e.value


def _run(rows: dict[str, list[tuple[str, float]]], tag: str = "t") -> Run:
    return Run(
        {
            q: tuple(RunEntry(q, d, i, s, tag) for i, (d, s) in enumerate(docs, start=1))
            for q, docs in rows.items()
        },
        name=tag,
    )


# --- runs -------------------------------------------------------------------------------------


def test_run_round_trip(tmp_path: Path) -> None:
    run = _run({"q2": [("d1", 3.5), ("d9", 2.25), ("d3", -1.0)], "q1": [("x", 0.5)]})
    path = write_run(run, tmp_path / "sub" / "run.trec")
    back = read_run(path)
    assert back.qids() == ["q2", "q1"]
    assert back.name == "t"
    for qid, rows in run.entries.items():
        assert [(e.docid, e.rank, e.tag) for e in back.entries[qid]] == [
            (e.docid, e.rank, e.tag) for e in rows
        ]
        assert [e.score for e in back.entries[qid]] == pytest.approx([e.score for e in rows])
    assert path.read_text().splitlines()[0] == "q2 Q0 d1 1 3.500000 t"


def test_read_run_uses_trec_eval_order_and_renumbers(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # the rank column says a, b, c; trec_eval sorts by score desc, then docid desc.
    path = _file(tmp_path, "r.trec", "q Q0 a 1 1.0 t\nq Q0 b 2 2.0 t\n\nq Q0 c 3 1.0 t\n")
    with caplog.at_level(logging.WARNING):
        run = read_run(path)
    assert [(e.docid, e.rank) for e in run.entries["q"]] == [("b", 1), ("c", 2), ("a", 3)]
    assert "disagrees" in caplog.text


def test_tie_safe_write_keeps_rank_order(tmp_path: Path) -> None:
    # all tied: trec_eval would evaluate them as c, b, a (docid descending)
    run = _run({"q": [("a", 1.0), ("b", 1.0), ("c", 1.0), ("d", 0.5)]})
    back = read_run(write_run(run, tmp_path / "safe.trec"))
    assert [e.docid for e in back.entries["q"]] == ["a", "b", "c", "d"]
    scores = [e.score for e in back.entries["q"]]
    assert scores[0] == 1.0 and scores[-1] == 0.5  # untied scores are kept
    assert all(x > y for x, y in itertools.pairwise(scores))
    unsafe = read_run(write_run(run, tmp_path / "unsafe.trec", tie_safe=False))
    assert [e.docid for e in unsafe.entries["q"]] == ["c", "b", "a", "d"]


def test_tie_safe_handles_near_ties(tmp_path: Path) -> None:
    run = _run({"q": [("a", 2.0000004), ("b", 2.0), ("c", 1.999999), ("z", 1.99999)]})
    back = read_run(write_run(run, tmp_path / "r.trec"))
    assert [e.docid for e in back.entries["q"]] == ["a", "b", "c", "z"]


def test_write_run_rejects_bad_tokens(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="whitespace"):
        write_run(_run({"q": [("a b", 1.0)]}), tmp_path / "r.trec")
    with pytest.raises(ValueError, match="non-finite"):
        write_run(_run({"q": [("a", float("nan"))]}), tmp_path / "r.trec")
    assert not (tmp_path / "r.trec").exists()


def test_run_wrong_column_count(tmp_path: Path) -> None:
    path = _file(tmp_path, "r.trec", "q Q0 a 1 1.0 t\n\nq Q0 b 2 0.5\n")
    err = _raises_at(path, 3, read_run)
    assert "6 columns" in str(err)


def test_qrels_given_as_run_and_run_as_qrels_say_swapped(tmp_path: Path) -> None:
    qrels = _file(tmp_path, "q.txt", "q 0 a 2\n")
    assert "swapped?" in str(_raises_at(qrels, 1, read_run))
    run = _file(tmp_path, "r.trec", "q Q0 a 1 1.5 tag\n")
    err = str(_raises_at(run, 1, read_qrels))
    assert "expected 4 columns, got 6" in err and "looks like a TREC run" in err
    assert "swapped?" in err
    # A malformed line that is neither keeps the plain fix.
    assert "swapped" not in str(_raises_at(_file(tmp_path, "x.trec", "q Q0 a\n"), 1, read_run))


def test_run_non_numeric_score(tmp_path: Path) -> None:
    path = _file(tmp_path, "r.trec", "q Q0 a 1 1.0 t\nq Q0 b 2 high t\n")
    assert "score" in str(_raises_at(path, 2, read_run))


def test_run_non_numeric_rank(tmp_path: Path) -> None:
    path = _file(tmp_path, "r.trec", "q Q0 a first 1.0 t\n")
    assert "rank" in str(_raises_at(path, 1, read_run))


def test_run_non_finite_score(tmp_path: Path) -> None:
    path = _file(tmp_path, "r.trec", "q Q0 a 1 nan t\n")
    _raises_at(path, 1, read_run)


def test_run_duplicate_docid(tmp_path: Path) -> None:
    path = _file(tmp_path, "r.trec", "q Q0 a 1 1.0 t\nq2 Q0 a 1 1.0 t\nq Q0 a 2 0.5 t\n")
    assert "line 1" in str(_raises_at(path, 3, read_run))


def test_run_docid_missing_from_corpus(tmp_path: Path) -> None:
    path = _file(tmp_path, "r.trec", "q Q0 a 1 1.0 t\nq Q0 zz 2 0.5 t\n")
    assert "'zz'" in str(_raises_at(path, 2, read_run, corpus_ids={"a", "b"}))


def test_run_qid_missing_from_topics(tmp_path: Path) -> None:
    path = _file(tmp_path, "r.trec", "q Q0 a 1 1.0 t\nq9 Q0 a 1 0.5 t\n")
    assert "'q9'" in str(_raises_at(path, 2, read_run, query_ids=Topics({"q": "text"})))


def test_run_empty_file(tmp_path: Path) -> None:
    _raises_at(_file(tmp_path, "r.trec", "\n\n"), None, read_run)


# --- qrels ------------------------------------------------------------------------------------


def test_qrels_round_trip_with_negative_grades(tmp_path: Path) -> None:
    qrels = Qrels({"q1": {"a": 2, "b": 0, "c": -1}, "q2": {"a": 1}})
    back = read_qrels(write_qrels(qrels, tmp_path / "qrels.txt"))
    assert back.to_dict() == qrels.to_dict()


def test_qrels_grade_not_integer(tmp_path: Path) -> None:
    path = _file(tmp_path, "qrels", "q 0 a 1\nq 0 b 1.5\n")
    assert "grade" in str(_raises_at(path, 2, read_qrels))


def test_qrels_wrong_column_count(tmp_path: Path) -> None:
    path = _file(tmp_path, "qrels", "q 0 a 1\n\nq a 1\n")
    _raises_at(path, 3, read_qrels)


def test_qrels_duplicate_judgement(tmp_path: Path) -> None:
    path = _file(tmp_path, "qrels", "q 0 a 1\nq 0 a 2\n")
    _raises_at(path, 2, read_qrels)


# --- topics -----------------------------------------------------------------------------------


def test_topics_round_trip(tmp_path: Path) -> None:
    topics = Topics({"1": "what is a flea", "q-2": "tabs\tand\nnewlines become spaces"})
    back = read_topics(write_topics(topics, tmp_path / "topics.tsv"))
    assert back.to_dict() == {"1": "what is a flea", "q-2": "tabs and newlines become spaces"}


def test_topics_empty_text(tmp_path: Path) -> None:
    path = _file(tmp_path, "topics.tsv", "1\tfine\n2\t   \n")
    assert "non-empty" in str(_raises_at(path, 2, read_topics))


def test_topics_without_tab(tmp_path: Path) -> None:
    path = _file(tmp_path, "topics.tsv", "1 no tab here\n")
    _raises_at(path, 1, read_topics)


def test_topics_duplicate_qid(tmp_path: Path) -> None:
    path = _file(tmp_path, "topics.tsv", "1\ta\n1\tb\n")
    _raises_at(path, 2, read_topics)


# --- real data --------------------------------------------------------------------------------


def test_dl19_files(shared_data: Path) -> None:
    folder = shared_data / "trec-dl19-passage"
    topics = read_topics(folder / "topics.dl19-passage.txt")
    run = read_run(folder / "bm25_top100_dl19.trec", query_ids=topics)
    qrels = read_qrels(folder / "qrels.dl19-passage.txt")
    assert len(topics) == 43 and len(run.qids()) == 43 and len(run) == 4300
    assert set(run.qids()) == set(qrels.qids())
    assert {g for docs in qrels.judgements.values() for g in docs.values()} == {0, 1, 2, 3}
    first = run.entries["264014"][0]
    assert (first.docid, first.rank, first.score) == ("5611210", 1, pytest.approx(15.7806, 1e-4))
