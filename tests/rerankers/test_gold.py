"""GoldQrelsReranker (the judgements as a teacher) and scripts/data/export_qrels.py."""

from __future__ import annotations

import hashlib
import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

from presentation_dependence.data.config import DataConfig
from presentation_dependence.errors import ConfigError, InputFormatError
from presentation_dependence.io.trec import read_qrels
from presentation_dependence.records import Candidate, Qrels, Query
from presentation_dependence.rerankers import Paradigm, build_reranker
from presentation_dependence.rerankers.gold import GoldQrelsOptions, GoldQrelsReranker

REPO = Path(__file__).resolve().parents[2]
QUERY = Query("q1", "what do fleas eat")
CANDS = [Candidate(f"d{i}", f"passage {i}", i + 1) for i in range(5)]


def qrels_file(tmp_path: Path, lines: str) -> Path:
    path = tmp_path / "qrels.txt"
    path.write_text(lines, encoding="utf-8")
    return path


def gold(path: Path, **kw: object) -> GoldQrelsReranker:
    r = build_reranker("GoldQrelsReranker", GoldQrelsOptions(qrels=str(path), **kw))  # type: ignore[arg-type]
    assert isinstance(r, GoldQrelsReranker)
    return r


def load_script(rel: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(Path(rel).stem, REPO / rel)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_grades_map_onto_0_to_3(tmp_path):
    path = qrels_file(tmp_path, "q1 0 d0 3\nq1 0 d1 1\nq1 0 d2 -1\nq1 0 d3 0\nq2 0 d0 2\n")
    res = gold(path).rank(QUERY, CANDS)
    assert [it.score for it in res.items] == [3.0, 1.0, 0.0, 0.0, 0.0]
    assert [it.details["judged"] for it in res.items] == [True, True, True, True, False]
    assert res.ranked()[0].candidate.docid == "d0"
    binary = gold(path, max_grade=3).rank(Query("q2", "x"), CANDS)
    assert [it.score for it in binary.items] == [2.0, 0, 0, 0, 0]


def test_qrels_data_binds_each_blocks_judgements():
    unbound = build_reranker("GoldQrelsReranker", GoldQrelsOptions(qrels="data", max_grade="auto"))
    assert isinstance(unbound, GoldQrelsReranker) and unbound.binds_judgements
    with pytest.raises(ConfigError, match="with_judgements"):
        unbound.rank(QUERY, CANDS)
    binary = unbound.with_judgements(Qrels({"q1": {"d1": 1, "d4": 1}}), "a")
    graded = unbound.with_judgements(Qrels({"q1": {"d0": 2, "d2": 1}}), "b")
    assert [it.score for it in binary.rank(QUERY, CANDS).items] == [0.0, 3.0, 0.0, 0.0, 3.0]
    assert [it.score for it in graded.rank(QUERY, CANDS).items] == [3.0, 0.0, 1.5, 0.0, 0.0]
    with pytest.raises(ConfigError, match="'c' carries no judgements"):
        unbound.with_judgements(None, "c")
    with pytest.raises(ConfigError, match="above max_grade 1"):
        build_reranker(
            "GoldQrelsReranker", GoldQrelsOptions(qrels="data", max_grade=1)
        ).with_judgements(  # type: ignore[attr-defined]
            Qrels({"q1": {"d0": 2}}), "b"
        )
    with pytest.raises(ConfigError, match="'auto'"):
        GoldQrelsOptions(qrels="data", max_grade="top")


def test_binary_qrels_with_max_grade_1(tmp_path):
    path = qrels_file(tmp_path, "q1 0 d1 1\nq1 0 d4 1\nq1 0 d0 0\n")
    scores = [it.score for it in gold(path, max_grade=1).rank(QUERY, CANDS).items]
    assert scores == [0.0, 3.0, 0.0, 0.0, 3.0]


def test_order_free_and_described(tmp_path):
    path = qrels_file(tmp_path, "q1 0 d0 2\nq1 0 d3 1\n")
    r = gold(path)
    assert r.paradigm is Paradigm.POINTWISE
    a = {it.candidate.docid: it.score for it in r.rank(QUERY, CANDS).items}
    b = {it.candidate.docid: it.score for it in r.rank(QUERY, CANDS[::-1]).items}
    assert a == b
    d = r.describe()
    assert d["qrels_sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert d["qrels_queries"] == 1 and "max_grade" in d["options"]


def test_query_without_judgements(tmp_path):
    path = qrels_file(tmp_path, "q1 0 d0 2\n")
    with pytest.raises(ConfigError, match=r"no judgements.*allow_unjudged_queries"):
        gold(path).rank(Query("q9", "x"), CANDS)
    res = gold(path, allow_unjudged_queries=True).rank(Query("q9", "x"), CANDS)
    assert {it.score for it in res.items} == {0.0}
    assert gold(path).rank(Query("q9", "x"), []).items == ()


def test_config_errors(tmp_path):
    path = qrels_file(tmp_path, "q1 0 d0 3\n")
    with pytest.raises(ConfigError, match=r"above max_grade 1.*max_grade: 3"):
        gold(path, max_grade=1)
    with pytest.raises(ConfigError, match="needs qrels"):
        GoldQrelsReranker(GoldQrelsOptions())
    with pytest.raises(ConfigError, match="none of these files exists"):
        GoldQrelsReranker(GoldQrelsOptions(qrels=[str(tmp_path / "a"), str(tmp_path / "b")]))
    with pytest.raises(ConfigError, match="max_grade"):
        GoldQrelsOptions(qrels=str(path), max_grade=0)
    # alternatives: the first that exists is read
    r = GoldQrelsReranker(GoldQrelsOptions(qrels=[str(tmp_path / "missing"), str(path)]))
    assert r.path == path
    bad = qrels_file(tmp_path, "q1 0 d0\n")
    with pytest.raises(InputFormatError, match="4 columns"):
        gold(bad)


def _hotpot_line(qid: str, supporting: tuple[int, ...]) -> dict[str, object]:
    return {
        "question_id": qid,
        "question_text": f"Who is {qid}?",
        "answers_objects": [
            {"number": "", "date": {"day": "", "month": "", "year": ""}, "spans": ["Ann"]}
        ],
        "contexts": [
            {
                "id": str(i),
                "title": f"T{i}",
                "paragraph_text": f"Para {i}.",
                "is_supporting": i in supporting,
            }
            for i in range(4)
        ],
    }


def test_export_qrels_of_hotpotqa_supporting_paragraphs(tmp_path):
    data = tmp_path / "hq.jsonl"
    data.write_text(
        "".join(
            json.dumps(_hotpot_line(q, s)) + "\n"
            for q, s in (("a", (1, 2)), ("b", (0, 3)), ("c", (2,)))
        ),
        encoding="utf-8",
    )
    out = tmp_path / "gold.txt"
    script = load_script("scripts/data/export_qrels.py")
    block = f"{{dataloader_class: HotpotQALoader, path: {data}, max_queries: 2}}"
    assert script.main(["--data", block, "--out", str(out)]) == 0
    qrels = read_qrels(out)
    assert qrels.qids() == ["a", "b"]  # only the queries the block keeps
    assert {d for d, g in qrels.judgements["a"].items() if g > 0} == {"1", "2"}
    from presentation_dependence.data import load_dataset

    ds = load_dataset(DataConfig(dataloader_class="HotpotQALoader", path=str(data), max_queries=2))
    teacher = gold(out, max_grade=1)
    for req in ds.requests:
        res = teacher.rank(req.query, req.candidates)
        top2 = {it.candidate.docid for it in res.ranked()[:2]}
        assert top2 == {d for d, g in qrels.judgements[req.query.qid].items() if g > 0}
    assert (
        script.main(["--data", "{dataloader_class: HotpotQALoader, pth: x}", "--out", str(out)])
        == 2
    )
    assert script.main(["--data", "[not, a, block]", "--out", str(out)]) == 2
