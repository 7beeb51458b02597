"""HotpotQA (distractor setting) in IRCoT's "processed_data" JSONL: multi-document QA.

One question per line::

    {"question_id": "5a8c...", "question_text": "...",
     "answers_objects": [{"number": "", "date": {"day": "", "month": "", "year": ""},
                          "spans": ["Chief of Protocol"]}],
     "contexts": [{"id": "0", "title": "...", "paragraph_text": "...",
                   "is_supporting": false}, ...]}

(``../shared/data/hotpotqa-distractor-dev500/SOURCE.md``). :class:`HotpotQALoader` turns each
line into a :class:`RerankRequest` whose candidates are the paragraphs in **file order** (the
first-stage order: rank = position, no first-stage score), the candidate text being
``"<title>: <paragraph_text>"`` and the docid the context ``id``; the judgements give every
paragraph of the question grade 1 when ``is_supporting`` and 0 otherwise, so QA nDCG@10 uses the
gold paragraphs as relevant. The gold answers (every span of every answer object; a ``number``
when an object has no span) are not part of a :class:`Dataset`; :func:`load_answers` reads them
for the QA runner, for the same questions the loader keeps.

Every malformed line raises :class:`InputFormatError` naming the file and the line; unknown keys
are errors, so a typo or another format cannot pass silently.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from presentation_dependence.data.config import DataConfig
from presentation_dependence.data.loaders import LOADERS, Dataset, Loader
from presentation_dependence.errors import ConfigError, InputFormatError
from presentation_dependence.io._lines import check_id, check_keys, iter_lines, parse_json_line
from presentation_dependence.records import Candidate, Qrels, Query, RerankRequest

__all__ = ["HotpotQALoader", "HotpotQARecords", "load_answers", "read_hotpotqa"]

FIX = (
    'write one {"question_id", "question_text", "answers_objects": [{"spans": [...]}], '
    '"contexts": [{"id", "title", "paragraph_text", "is_supporting"}]} object per line '
    "(IRCoT processed_data format)"
)
_LINE_KEYS = ("question_id", "question_text", "answers_objects", "contexts")
_CONTEXT_KEYS = ("id", "title", "paragraph_text", "is_supporting")
_ANSWER_KEYS = ("number", "date", "spans")


@dataclass(frozen=True)
class HotpotQARecords:
    """A HotpotQA file read whole: requests in file order, judgements and gold answers."""

    requests: tuple[RerankRequest, ...]
    qrels: Qrels
    answers: Mapping[str, tuple[str, ...]]


def _text(path: Path, lineno: int, value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InputFormatError(path, lineno, f"a non-empty string {what}", repr(value)[:60], FIX)
    return value.strip()


def _answers(path: Path, lineno: int, raw: Any) -> tuple[str, ...]:
    if not isinstance(raw, list) or not raw:
        raise InputFormatError(
            path, lineno, 'a non-empty "answers_objects" list', repr(raw)[:60], FIX
        )
    out: list[str] = []
    for pos, obj in enumerate(raw, start=1):
        if not isinstance(obj, dict):
            raise InputFormatError(
                path, lineno, f"answers_objects[{pos}] as an object", repr(obj)[:60], FIX
            )
        check_keys(path, lineno, obj, _ANSWER_KEYS, FIX)
        spans = obj.get("spans", [])
        if not isinstance(spans, list) or not all(isinstance(s, str) for s in spans):
            raise InputFormatError(
                path, lineno, f"answers_objects[{pos}].spans as a list of strings", repr(spans), FIX
            )
        found = [s.strip() for s in spans if s.strip()]
        number = obj.get("number", "")
        if not found and isinstance(number, (str, int, float)) and str(number).strip():
            found = [str(number).strip()]
        out.extend(found)
    if not out:
        raise InputFormatError(
            path, lineno, "at least one non-empty answer span", "no answer text", FIX
        )
    return tuple(dict.fromkeys(out))  # distinct, first occurrence first


def _contexts(
    path: Path, lineno: int, qid: str, raw: Any
) -> tuple[tuple[Candidate, ...], dict[str, int]]:
    if not isinstance(raw, list) or not raw:
        raise InputFormatError(path, lineno, 'a non-empty "contexts" list', repr(raw)[:60], FIX)
    cands: list[Candidate] = []
    grades: dict[str, int] = {}
    for pos, ctx in enumerate(raw, start=1):
        if not isinstance(ctx, dict):
            raise InputFormatError(
                path, lineno, f"contexts[{pos}] as an object", repr(ctx)[:60], FIX
            )
        check_keys(path, lineno, ctx, _CONTEXT_KEYS, FIX)
        cid = ctx.get("id")
        if isinstance(cid, bool) or not isinstance(cid, (str, int)) or not str(cid).strip():
            raise InputFormatError(
                path, lineno, f"a non-empty id for contexts[{pos}]", repr(cid), FIX
            )
        docid = str(cid).strip()
        if any(ch.isspace() for ch in docid):
            raise InputFormatError(
                path, lineno, f"an id without whitespace (contexts[{pos}])", repr(docid), FIX
            )
        if docid in grades:
            raise InputFormatError(
                path,
                lineno,
                "each context id once per question",
                f"id {docid!r} twice in question {qid!r}",
                "give every paragraph of a question its own id",
            )
        title = _text(path, lineno, ctx.get("title"), f"title ({docid!r})")
        body = _text(path, lineno, ctx.get("paragraph_text"), f"paragraph_text ({docid!r})")
        supporting = ctx.get("is_supporting")
        if not isinstance(supporting, bool):
            raise InputFormatError(
                path, lineno, f"is_supporting true or false ({docid!r})", repr(supporting), FIX
            )
        cands.append(Candidate(docid, f"{title}: {body}", rank=pos))
        grades[docid] = int(supporting)
    return tuple(cands), grades


def read_hotpotqa(path: str | Path) -> HotpotQARecords:
    """Read a HotpotQA JSONL file strictly (see the module docstring)."""
    path = Path(path)
    requests: list[RerankRequest] = []
    judgements: dict[str, dict[str, int]] = {}
    answers: dict[str, tuple[str, ...]] = {}
    seen: dict[str, int] = {}
    for lineno, line in iter_lines(path):
        obj = parse_json_line(path, lineno, line)
        check_keys(path, lineno, obj, _LINE_KEYS, FIX)
        for key in _LINE_KEYS:
            if key not in obj:
                raise InputFormatError(path, lineno, f"the key {key!r}", "it is missing", FIX)
        qid = check_id(
            path, lineno, _text(path, lineno, obj["question_id"], "question_id"), "question_id"
        )
        if qid in seen:
            raise InputFormatError(
                path,
                lineno,
                "each question_id once",
                f"question_id {qid!r} again (first on line {seen[qid]})",
                "drop the duplicate line",
            )
        seen[qid] = lineno
        question = _text(path, lineno, obj["question_text"], "question_text")
        cands, grades = _contexts(path, lineno, qid, obj["contexts"])
        requests.append(RerankRequest(Query(qid, question), cands))
        judgements[qid] = grades
        answers[qid] = _answers(path, lineno, obj["answers_objects"])
    if not requests:
        raise InputFormatError(path, None, "at least one question line", "an empty file", FIX)
    return HotpotQARecords(tuple(requests), Qrels(judgements), answers)


@LOADERS.register()
class HotpotQALoader(Loader):
    """``data.path``: HotpotQA in IRCoT JSONL; gold paragraphs are grade 1, the others 0.

    Candidates are the paragraphs in file order (``"<title>: <text>"``); the gold answers come
    from :func:`load_answers`.
    """

    def load(self) -> Dataset:
        return self.load_with_answers()[0]

    def load_with_answers(self) -> tuple[Dataset, dict[str, tuple[str, ...]]]:
        """The dataset and the gold answers of the questions it keeps (one read of the file)."""
        path = self._path("path")
        data = read_hotpotqa(path)
        dataset = self._finish(data.requests, data.qrels, path.stem)
        return dataset, {qid: data.answers[qid] for qid in dataset.qids()}


def load_answers(cfg: DataConfig) -> dict[str, tuple[str, ...]]:
    """The gold answers of the questions :class:`HotpotQALoader` keeps for ``cfg``."""
    if cfg.dataloader_class != "HotpotQALoader":
        raise ConfigError(
            "gold answers come with data.dataloader_class HotpotQALoader, got "
            f"{cfg.dataloader_class!r}"
        )
    return HotpotQALoader(cfg).load_with_answers()[1]
