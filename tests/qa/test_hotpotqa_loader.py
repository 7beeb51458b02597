"""HotpotQALoader on the real file (skipped without it) and on malformed copies."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from presentation_dependence.data import LOADERS, load_dataset
from presentation_dependence.data.config import DataConfig
from presentation_dependence.data.hotpotqa import load_answers, read_hotpotqa
from presentation_dependence.errors import ConfigError, InputFormatError

FILE = "hotpotqa-distractor-dev500/hotpotqa_dev_distractor_500.ircot_format.jsonl"


def _question(qid: str = "q1", n: int = 4) -> dict[str, Any]:
    return {
        "question_id": qid,
        "question_text": f"Who is {qid}?",
        "answers_objects": [
            {"number": "", "date": {"day": "", "month": "", "year": ""}, "spans": ["Ann"]}
        ],
        "contexts": [
            {
                "id": str(i),
                "title": f"Title {i}",
                "paragraph_text": f"Paragraph  {i} text.",
                "is_supporting": i in (1, 2),
            }
            for i in range(n)
        ],
    }


def _write(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_registered() -> None:
    assert "HotpotQALoader" in LOADERS


def test_small_file(tmp_path: Path) -> None:
    path = _write(tmp_path / "hq.jsonl", [_question("q1"), _question("q2", 2), _question("q3")])
    cfg = DataConfig(dataloader_class="HotpotQALoader", path=str(path), max_queries=2)
    ds = load_dataset(cfg)
    assert ds.qids() == ["q1", "q2"]
    cands = ds.requests[0].candidates
    assert [(c.docid, c.rank) for c in cands] == [("0", 1), ("1", 2), ("2", 3), ("3", 4)]
    assert cands[1].text == "Title 1: Paragraph  1 text."
    assert ds.qrels is not None
    assert ds.qrels.judgements["q1"] == {"0": 0, "1": 1, "2": 1, "3": 0}
    assert load_answers(cfg) == {"q1": ("Ann",), "q2": ("Ann",)}
    with pytest.raises(ConfigError, match="HotpotQALoader"):
        load_answers(DataConfig(path=str(path)))


def _mutate(row: dict[str, Any], what: str) -> Any:
    if what == "missing_key":
        del row["question_text"]
    elif what == "unknown_key":
        row["contxts"] = row.pop("contexts")
    elif what == "no_answer":
        row["answers_objects"][0]["spans"] = [""]
    elif what == "dup_id":
        row["contexts"][1]["id"] = "0"
    elif what == "bad_supporting":
        row["contexts"][0]["is_supporting"] = "yes"
    elif what == "empty_text":
        row["contexts"][2]["paragraph_text"] = "  "
    elif what == "not_object":
        return ["a list"]
    return row


@pytest.mark.parametrize(
    ("what", "message"),
    [
        ("missing_key", "the key 'question_text'"),
        ("unknown_key", "unknown key 'contxts'. Did you mean 'contexts'"),
        ("no_answer", "at least one non-empty answer span"),
        ("dup_id", "each context id once"),
        ("bad_supporting", "is_supporting true or false"),
        ("empty_text", "paragraph_text"),
        ("not_object", "a JSON object"),
    ],
)
def test_malformed_line_names_file_and_line(tmp_path: Path, what: str, message: str) -> None:
    rows = [_question("q1"), _mutate(_question("q2"), what)]
    path = _write(tmp_path / "bad.jsonl", rows)
    with pytest.raises(InputFormatError, match=message) as err:
        read_hotpotqa(path)
    assert err.value.line == 2 and str(path) in str(err.value)


def test_duplicate_question_and_bad_json(tmp_path: Path) -> None:
    path = _write(tmp_path / "dup.jsonl", [_question("q1"), _question("q1")])
    with pytest.raises(InputFormatError, match=r"first on line 1"):
        read_hotpotqa(path)
    broken = tmp_path / "broken.jsonl"
    broken.write_text(json.dumps(_question()) + "\n{not json\n", encoding="utf-8")
    with pytest.raises(InputFormatError, match=r"broken.jsonl:2"):
        read_hotpotqa(broken)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n", encoding="utf-8")
    with pytest.raises(InputFormatError, match="empty file"):
        read_hotpotqa(empty)


def test_real_file(shared_data: Path) -> None:
    path = shared_data / FILE
    if not path.is_file():
        pytest.skip(f"{path} not found")
    data = read_hotpotqa(path)
    assert len(data.requests) == 500
    sizes = [len(r.candidates) for r in data.requests]
    assert sizes.count(10) == 489  # SOURCE.md: 10 paragraphs for 489 questions
    assert all(sum(g.values()) == 2 for g in data.qrels.judgements.values())  # 2 gold each
    first = data.requests[0]
    assert first.query.qid == "5a8c7595554299585d9e36b6"
    assert first.candidates[1].text.startswith("Shirley Temple: Shirley Temple Black")
    assert data.answers[first.query.qid] == ("Chief of Protocol",)
    cfg = DataConfig(dataloader_class="HotpotQALoader", path=str(path), top_k=10, max_queries=100)
    ds = load_dataset(cfg)
    assert len(ds.requests) == 100 and ds.qrels is not None and len(ds.qrels.judgements) == 100
    assert list(load_answers(cfg)) == ds.qids()
