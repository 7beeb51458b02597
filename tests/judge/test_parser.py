"""The strict verdict parser on adversarial judgements."""

from __future__ import annotations

import pytest

from presentation_dependence.errors import ConfigError
from presentation_dependence.judge.parser import parse_verdict, parser_version


def test_single_marker_parses() -> None:
    r = parse_verdict("Assistant C shows the right arithmetic.\n\n[[C]]", 4)
    assert (r.status, r.slot, r.letter, r.num_markers) == ("ok", 2, "C", 1)


@pytest.mark.parametrize("text", ["", "The best is B.", "Verdict: [B]", "[[ ]] none", "[[AB]]"])
def test_no_marker_fails(text: str) -> None:
    r = parse_verdict(text, 4)
    assert (r.status, r.slot, r.letter) == ("no_marker", None, None)


def test_two_markers_fail_strict_even_if_equal() -> None:
    assert parse_verdict("[[B]] ... final: [[D]]", 4).status == "multiple_markers"
    assert parse_verdict("[[B]] I repeat: [[B]]", 4).status == "multiple_markers"


def test_marker_quoted_in_reasoning() -> None:
    text = (
        'The format asks for "[[A]]" if assistant A is best, but A miscounts the eggs. '
        "Assistant B is right.\n\nFinal verdict: [[B]]"
    )
    # RewardBench 2's parser checks [[A]] first and would read A here.
    assert parse_verdict(text, 4).status == "multiple_markers"
    last = parse_verdict(text, 4, rule="last")
    assert (last.status, last.letter, last.num_markers) == ("ok", "B", 2)


def test_mentioned_marker_alone_is_the_verdict_and_documented() -> None:
    # A single mention cannot be told from a verdict: it parses (the documented limit).
    assert parse_verdict("I would not say [[A]].", 4).letter == "A"


def test_out_of_range_and_malformed_markers() -> None:
    assert parse_verdict("[[E]]", 4).status == "invalid_marker"
    assert parse_verdict("[[c]]", 4).status == "invalid_marker"
    assert parse_verdict("[[ C ]]", 4).status == "invalid_marker"
    assert parse_verdict("[[C]] then [[e]]", 4, rule="last").status == "invalid_marker"
    assert parse_verdict("[[E]]", 5).letter == "E"


def test_n_way_and_pairs() -> None:
    assert parse_verdict("[[H]]", 8).slot == 7
    assert parse_verdict("[[C]]", 2).status == "invalid_marker"
    assert parse_verdict("[[B]]", 2).slot == 1
    with pytest.raises(ValueError):
        parse_verdict("[[A]]", 1)


def test_versions_and_unknown_rule() -> None:
    assert parser_version("strict") == "verdict-strict-v1"
    assert parser_version("last") == "verdict-last-v1"
    with pytest.raises(ConfigError):
        parse_verdict("[[A]]", 4, rule="first")
