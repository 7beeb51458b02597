"""Answer scoring (HotpotQA's official EM and F1) and the direction of answer flips.

Normalisation is :func:`~presentation_dependence.metrics.decisions.normalize_answer`, the
SQuAD/HotpotQA one: lower-case, drop ASCII punctuation, drop the articles a/an/the, collapse
whitespace. EM and F1 follow ``hotpot_evaluate_v1.py`` (Yang et al., "HotpotQA: A Dataset for
Diverse, Explainable Multi-hop Question Answering", EMNLP 2018):

* ``EM = 1[norm(pred) == norm(gold)]``;
* ``F1``: token F1 of the normalised strings (bag of whitespace tokens, clipped counts), except
  that when either normalised string is ``yes``, ``no`` or ``noanswer`` and the two differ, F1 is
  0 (no partial credit for "no" against "yes, it is");
* against several gold answers the best score counts (the maximum over golds).

Flip direction compares each presentation's answer with the answer read in the *given*
(first-stage) order: right→wrong when the given-order answer is correct (EM) and the
presentation's is not, wrong→right the other way round.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from presentation_dependence.metrics.decisions import normalize_answer

__all__ = [
    "FlipDirections",
    "best_em_f1",
    "exact_match",
    "extract_answer",
    "f1_score",
    "flip_directions",
]

_SPECIAL = frozenset({"yes", "no", "noanswer"})


def exact_match(prediction: str, gold: str) -> float:
    """1.0 when the normalised strings are equal, else 0.0."""
    return float(normalize_answer(prediction) == normalize_answer(gold))


def f1_score(prediction: str, gold: str) -> float:
    """HotpotQA's token F1 (0 for a yes/no/noanswer mismatch; 0 when nothing overlaps)."""
    pred, ref = normalize_answer(prediction), normalize_answer(gold)
    if (pred in _SPECIAL or ref in _SPECIAL) and pred != ref:
        return 0.0
    pred_tokens, ref_tokens = pred.split(), ref.split()
    same = sum((Counter(pred_tokens) & Counter(ref_tokens)).values())
    if same == 0:
        return 0.0
    precision = same / len(pred_tokens)
    recall = same / len(ref_tokens)
    return 2 * precision * recall / (precision + recall)


def best_em_f1(prediction: str, golds: Sequence[str]) -> tuple[float, float]:
    """``(max EM, max F1)`` of ``prediction`` over the gold answers (at least one)."""
    if not golds:
        raise ValueError("no gold answers")
    return (
        max(exact_match(prediction, g) for g in golds),
        max(f1_score(prediction, g) for g in golds),
    )


_PREFIXES = ("answer:", "the answer is:", "the answer is")


def extract_answer(generated: str) -> str:
    """The short answer in a reader's generated text: its first non-empty line, stripped, with
    one leading ``Answer:``, ``The answer is:`` or ``The answer is`` (any case) removed. Empty
    when nothing was generated."""
    for line in generated.splitlines():
        text = line.strip()
        low = text.lower()
        for prefix in _PREFIXES:
            if low.startswith(prefix):
                text = text[len(prefix) :].strip()
                break
        if text:
            return text
    return ""


@dataclass(frozen=True)
class FlipDirections:
    """How the answers of M presentations moved relative to the given-order answer."""

    right_to_wrong: float  # share of presentations: given right, this one wrong
    wrong_to_right: float  # share of presentations: given wrong, this one right
    any_right_to_wrong: float  # 1.0 when at least one presentation went right -> wrong
    any_wrong_to_right: float  # 1.0 when at least one presentation went wrong -> right


def flip_directions(given_correct: bool, correct: Sequence[bool]) -> FlipDirections:
    """Direction of the answer changes over M presentations, relative to the given order.

    ``right_to_wrong`` = share of the M presentations whose answer is wrong while the
    given-order answer is right; ``wrong_to_right`` the reverse (at most one of the two is
    non-zero for one question). ``any_*`` is 1.0 when at least one presentation flips that
    way. Correctness is EM. Raises ``ValueError`` for M = 0.
    """
    if len(correct) == 0:
        raise ValueError("no presentations")
    m = len(correct)
    wrong = sum(1 for c in correct if not c)
    right = m - wrong
    rw = wrong / m if given_correct else 0.0
    wr = right / m if not given_correct else 0.0
    return FlipDirections(rw, wr, float(rw > 0), float(wr > 0))
