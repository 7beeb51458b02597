"""qa_metrics.json from hand-made per-question records: flips, directions, Jaccard, control."""

from __future__ import annotations

import math
from typing import Any

import pytest

from presentation_dependence.config.robustness_config import RobustnessConfig
from presentation_dependence.metrics.decisions import normalize_answer
from presentation_dependence.qa.analysis import analyse_qa, question_metrics
from presentation_dependence.qa.report import render_qa_markdown
from presentation_dependence.qa.scoring import best_em_f1

ROB = RobustnessConfig(num_presentations=3, null_repeats=2, bootstrap_resamples=200)
DOCIDS = ["0", "1", "2", "3"]
GRADES = [0, 1, 0, 1]  # gold: 1 and 3


def _row(scores: list[float], retained: list[str], answer: str, gold: str) -> dict[str, Any]:
    em, f1 = best_em_f1(answer, [gold])
    return {
        "perm": [0, 1, 2, 3],
        "scores": scores,
        "retained": retained,
        "forward_passes": 1,
        "prompt_tokens": 100,
        "prompt_hash": "h-" + "".join(retained),
        "raw_answer": answer,
        "answer": answer,
        "normalized_answer": normalize_answer(answer),
        "cached": False,
        "reader_prompt_tokens": 50,
        "em": em,
        "f1": f1,
    }


def _record(qid: str, gold: str, given: str, shuffled: list[str], control: str) -> dict[str, Any]:
    good = [0.1, 2.0, 0.2, 1.9]  # ranks the two gold paragraphs first
    bad = [2.0, 0.1, 1.9, 0.2]  # ranks them last
    shuffle_rows = [
        _row(good if i % 2 == 0 else bad, ["1", "3"] if i % 2 == 0 else ["0", "2"], a, gold)
        for i, a in enumerate(shuffled)
    ]
    null_rows = [_row(good, ["1", "3"], given, gold) for _ in range(2)]
    c = _row([0.0] * 4, DOCIDS, control, gold)
    return {
        "qid": qid,
        "question": f"question {qid}",
        "answers": [gold],
        "docids": DOCIDS,
        "grades": GRADES,
        "ideal_grades": [1, 1, 0, 0],
        "control": {**c, "retained": DOCIDS},
        "variants": {"random_shuffle": shuffle_rows, "same_order": null_rows},
        "seconds": 1.0,
    }


RECORDS = [
    # given right; one of three shuffles wrong -> right->wrong 1/3, answer flips
    _record("q1", "Paris", "Paris", ["Paris", "London", "the Paris."], control="Paris"),
    # given wrong; two of three shuffles right -> wrong->right 2/3, answer flips
    _record("q2", "yes", "no", ["Yes", "no", "yes!"], control="no"),
    # given wrong, never right, but the (normalised) answer is stable -> no flip
    _record("q3", "Rome", "Milan", ["milan", "Milan.", "MILAN"], control="Rome"),
]


def test_question_metrics_by_hand() -> None:
    q1 = question_metrics(RECORDS[0], "random_shuffle", ROB)
    assert q1["answer_flip"] == 1.0 and q1["distinct_answers"] == 2.0
    assert q1["right_to_wrong"] == pytest.approx(1 / 3) and q1["wrong_to_right"] == 0.0
    assert q1["any_right_to_wrong"] == 1.0 and q1["any_wrong_to_right"] == 0.0
    assert q1["em"] == pytest.approx(2 / 3)
    # retained sets {1,3}, {0,2}, {1,3}: pairwise Jaccard 0, 1, 0 -> 1/3
    assert q1["jaccard_retained"] == pytest.approx(1 / 3)
    assert q1["retained_changed"] == 1.0
    assert q1["gold_recall"] == pytest.approx(2 / 3)
    # bad order ranks 0, 2, 3, 1: gains 0, 0, 1, 1 -> (1/log2 4 + 1/log2 5) / (1 + 1/log2 3)
    bad = (1 / math.log2(4) + 1 / math.log2(5)) / (1 + 1 / math.log2(3))
    assert q1["ndcg_mean"] == pytest.approx((1 + bad + 1) / 3)
    q2 = question_metrics(RECORDS[1], "random_shuffle", ROB)
    assert q2["wrong_to_right"] == pytest.approx(2 / 3) and q2["right_to_wrong"] == 0.0
    q3 = question_metrics(RECORDS[2], "random_shuffle", ROB)
    assert q3["answer_flip"] == 0.0 and q3["distinct_answers"] == 1.0
    assert q3["right_to_wrong"] == q3["wrong_to_right"] == 0.0


def test_null_is_exactly_zero() -> None:
    null = question_metrics(RECORDS[0], "same_order", ROB)
    assert null["tau_psi"] == 0.0
    assert null["answer_flip"] == 0.0 and null["jaccard_retained"] == 1.0
    assert null["right_to_wrong"] == 0.0 and null["wrong_to_right"] == 0.0


def test_analyse_qa_corpus_numbers() -> None:
    m = analyse_qa(RECORDS, ROB, seed=0)
    assert m["num_questions"] == 3
    shuffle = m["variants"]["random_shuffle"]
    assert shuffle["summary"]["answer_flip"]["mean"] == pytest.approx(2 / 3)
    assert shuffle["flip_counts"] == {
        "presentations": 9,
        "right_to_wrong": 1,
        "wrong_to_right": 2,
        "questions_any_right_to_wrong": 1,
        "questions_any_wrong_to_right": 1,
        "questions_answer_flip": 2,
    }
    ci = shuffle["summary"]["answer_flip"]
    assert ci["ci_low"] <= ci["mean"] <= ci["ci_high"] and ci["n"] == 3
    assert m["variants"]["same_order"]["summary"]["answer_flip"]["mean"] == 0.0
    # control EM: Paris right, no wrong, Rome right -> 2/3; given-order EM: 1/3
    assert m["control"]["em"]["mean"] == pytest.approx(2 / 3)
    assert m["given_order"]["em"]["mean"] == pytest.approx(1 / 3)
    assert m["given_order"]["vs_control"]["em"]["mean_diff"] == pytest.approx(-1 / 3)
    assert m["given_order"]["ndcg"]["mean"] == pytest.approx(1.0)
    assert m["cost"]["random_shuffle"]["forward_passes_per_question"] == 3.0
    # the same records and seed give the same numbers
    assert analyse_qa(RECORDS, ROB, seed=0) == m


def test_render_markdown_has_every_variant() -> None:
    text = render_qa_markdown(analyse_qa(RECORDS, ROB, seed=0))
    assert "random_shuffle (M = 3)" in text and "same-order null (M = 2)" in text
    assert "**answer flip rate**" in text and "0.667 [" in text
    assert "control" in text


def test_splice_and_measured_by() -> None:
    from presentation_dependence.qa.report import END, START, measured_by, splice

    doc = f"# QA\n\nintro\n{START}\nold\n{END}\n\nafter\n"
    assert splice(doc, "new table\n") == f"# QA\n\nintro\n{START}\nnew table\n{END}\n\nafter\n"
    with pytest.raises(ValueError):
        splice("no markers", "x")
    prov = {
        "invocations": [
            {
                "phase": "qa",
                "queries": {"to_compute": 3},
                "command": ["presdep", "qa", "c.yaml"],
                "time_utc": "T",
                "git": {"commit": "abcdef1234567890", "dirty": True},
                "packages": {"torch": "2", "transformers": "5"},
            },
            {"phase": "qa", "queries": {"to_compute": 0}, "command": ["rerun"]},
        ]
    }
    line = measured_by(prov)
    assert "`presdep qa c.yaml`" in line and "abcdef123456 (dirty)" in line
