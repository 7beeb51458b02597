"""The verdict readout judge on the tiny random model: single-token labels, probabilities,
seeded placements, and the response identity kept when candidates move."""

from __future__ import annotations

import numpy as np
import pytest

from presentation_dependence.errors import ConfigError
from presentation_dependence.judge.items.records import JudgeRequest, ResponseItem
from presentation_dependence.judge.judges.generative import JUDGE_TEMPLATES
from presentation_dependence.judge.judges.readout import (
    READOUT_PARSER_VERSION,
    ReadoutJudge,
    ReadoutJudgeOptions,
    VerdictLabelTokenizationError,
    argmax_verdict,
    check_verdict_labels,
)
from presentation_dependence.judge.placement import make_requests, placements
from presentation_dependence.readout.prompt import GradeLabelTokenizationError
from tests.judge.conftest import make_items


def readout(tiny: str, **kw: object) -> ReadoutJudge:
    opts = ReadoutJudgeOptions(model_name=tiny, device="cpu", dtype="float32", **kw)  # type: ignore[arg-type]
    return ReadoutJudge(opts)


def test_verdict_template_works_one_example_and_keeps_v1() -> None:
    t = JUDGE_TEMPLATES["judge_nway_verdict_v1"]
    four = t.render("Q?", ["a1", "a2", "a3", "a4"])
    assert "Verdict: [[D]]\nReason: Assistant D" in four
    assert four.index("[The End of Assistant D's Answer]") < four.index("Start your reply")
    two = t.render("Q?", ["x", "y"])
    assert 'exactly one of "[[A]]" or "[[B]]"' in two and "Verdict: [[B]]" in two
    assert t.version != JUDGE_TEMPLATES["judge_nway_v1"].version


def test_labels_are_single_tokens_and_probabilities_sum_to_one(tiny_model: str) -> None:
    j = readout(tiny_model)
    reqs = make_requests(make_items(2), "cyclic", 0)
    records = j.judge(reqs)
    assert len(records) == len(reqs) == 8
    ids = None
    for req, rec in zip(reqs, records, strict=True):
        built, label_ids = j.build(req)
        assert len(set(label_ids)) == 4
        assert ids is None or label_ids == ids
        ids = label_ids
        assert built.input_ids[-1] == label_ids[0] and built.grade_positions == (len(built) - 1,)
        assert built.text.endswith("Verdict: [[A")
        probs = np.asarray(rec.extra["verdict_probs"])
        assert probs.shape == (4,) and abs(probs.sum() - 1.0) < 1e-9 and (probs > 0).all()
        assert rec.parsed and rec.parse_status == "ok" and rec.finish == "readout"
        assert rec.verdict_slot in np.flatnonzero(probs == probs.max())
        assert rec.prompt_tokens == len(built) - 1 and rec.token_ids == ()


def test_a_label_that_merges_with_the_skeleton_is_refused(tiny_model: str) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model)
    assert len(check_verdict_labels(tok, "Verdict: [[", ["A", "B"])) == 2
    with pytest.raises(VerdictLabelTokenizationError, match="not a single token") as err:
        check_verdict_labels(tok, "Verdict: [[", ["A", "BB]]"])
    assert isinstance(err.value, GradeLabelTokenizationError)
    with pytest.raises(VerdictLabelTokenizationError):
        readout(tiny_model, skeleton="Verdict: ").judge(make_requests(make_items(1), "seeded", 0))


def test_seeded_placement_is_recorded(tiny_model: str) -> None:
    items = make_items(6)
    records = readout(tiny_model).judge(make_requests(items, "seeded", 7))
    for item, rec in zip(items, records, strict=True):
        assert [rec.placement] == placements("seeded", 4, 7, item.item_id)
        assert rec.correct_slot == rec.placement.index(item.correct_index)
    other = [r.placement for r in readout(tiny_model).judge(make_requests(items, "seeded", 8))]
    assert other != [r.placement for r in records]


def test_identity_kept_when_candidates_move(tiny_model: str) -> None:
    j = readout(tiny_model)
    item = ResponseItem(
        "moving", "Which fruit is red?", ("A banana.", "A cherry.", "A lime."), (False, True, False)
    )
    reqs = [JudgeRequest(item, p) for p in placements("full", 3, 0, item.item_id)]
    records = j.judge(reqs)
    for req, rec in zip(reqs, records, strict=True):
        assert (rec.item_id, rec.placement) == (item.item_id, req.placement)
        text = j.prompt_text(req)
        starts = [text.index(item.responses[i]) for i in req.placement]
        assert starts == sorted(starts)  # slot j shows response placement[j]
        by_slot, by_resp = rec.extra["verdict_probs"], rec.extra["response_probs"]
        assert [by_resp[req.placement[s]] for s in range(3)] == by_slot
        assert rec.verdict_slot is not None
        assert rec.correct == (req.placement[rec.verdict_slot] == item.correct_index)
    backwards = j.judge(reqs[::-1])
    assert backwards[::-1] == records
    assert j.judge(reqs, batch_size=3, one_at_a_time=True) == records


def test_exact_ties_are_broken_by_a_seeded_draw_not_by_slot() -> None:
    items = make_items(40, 2)
    tie = np.array([0.5, 0.5])
    picks = [argmax_verdict(tie, 0, JudgeRequest(it, (0, 1)))[0] for it in items]
    assert set(picks) == {0, 1}
    again = [argmax_verdict(tie, 0, JudgeRequest(it, (0, 1)))[0] for it in items]
    assert again == picks
    assert argmax_verdict(np.array([0.2, 0.8]), 0, JudgeRequest(items[0], (0, 1))) == (1, 1)


def test_identity_names_the_readout_and_its_skeleton(tiny_model: str) -> None:
    j = readout(tiny_model)
    ident = j.identity()
    assert ident.judge_class == "readout" and ident.parser_version == READOUT_PARSER_VERSION
    assert (
        ident.prompt_version.startswith("judge_nway_verdict_v1:")
        and "+readout:" in ident.prompt_version
    )
    assert readout(tiny_model, skeleton="Answer: [[").identity().cache_key() != ident.cache_key()
    assert j.describe()["skeleton"] == "Verdict: [["


def test_options_are_validated() -> None:
    with pytest.raises(ConfigError):
        ReadoutJudgeOptions(template="nope")
    with pytest.raises(ConfigError):
        ReadoutJudgeOptions(batch_size=0)
    with pytest.raises(ConfigError):
        ReadoutJudgeOptions(dtype="int8")
    with pytest.raises(ConfigError, match="compile"):
        ReadoutJudgeOptions(compile=1)  # type: ignore[arg-type]


def test_compiled_layers_read_the_eager_verdicts(tiny_model: str) -> None:
    """``compile: true`` runs the same forward pass through the compiled decoder layers: the
    verdict probabilities match eager float32 to 1e-5, and the verdicts are the same."""
    reqs = make_requests(make_items(2), "cyclic", 0)
    eager = readout(tiny_model).judge(reqs)
    compiled_judge = readout(tiny_model, compile=True)
    compiled = compiled_judge.judge(reqs)
    assert compiled_judge.describe()["options"]["compile"] is True
    for a, b in zip(eager, compiled, strict=True):
        pa, pb = np.asarray(a.extra["verdict_probs"]), np.asarray(b.extra["verdict_probs"])
        assert np.abs(pa - pb).max() < 1e-5
        assert a.verdict_slot == b.verdict_slot
