"""ClosedModelGenBscReranker: a hosted teacher over an OpenAI-compatible chat-completions API.

The model reads the readout's user turn (template ``pathc_grade_v1``: the query and B passages
tagged ``[1]..[B]``) and *writes* one line ``[i] grade:g`` per passage. Each query is shown in
K shuffled presentations (``num_orders``; orders from ``default_rng([seed, crc32(qid)])``, the
same stream as BatchedSelfConsistencyReranker); a candidate's score is the mean of its
parseable grades over the K presentations. The parser is strict (:func:`parse_grades`): a line
that is not exactly ``[i] grade:g`` with ``g`` in 0..3, a slot answered twice, or a slot not
answered leaves that candidate's grade for that presentation *missing*: counted in the details
(``missing_grades``), never credited. A candidate with no parseable grade at all scores 0 and
is flagged ``all_missing``. When more than ``max_missing_fraction`` of a query's grades are
missing (all of them, say, from a teacher that answers in prose), the query *fails*
(:class:`ApiRequestError`) instead of being written as a run of zeros; an answer with no
parseable grade at all is never cached, so a rerun asks again.

HTTP: the standard library only (``urllib.request``). Requests run concurrently up to
``max_concurrency``; each attempt has a wall-clock deadline of ``timeout_s`` from connecting to
the last byte (a server trickling bytes cannot hold it longer: its socket is shut when the
deadline passes). 429, 5xx, timeouts, connection errors and malformed bodies are retried
with exponential backoff and jitter from a seeded generator (``Retry-After`` respected, capped
at ``backoff_max_s``), at most ``max_retries`` times; a request that still fails raises
:class:`ApiRequestError`, so a query is never written half-answered. Any other 4xx is not
retried; its error shows the server's reason (the body, truncated and redacted). Answers are cached on disk
(one JSON file per request, written atomically) under the sha256 of the model snapshot, the
full prompt messages (so the candidate order is in the key), the template and parser versions
and the sampling settings. The API key is read from the environment variable ``api_key_env``
at request time; it is never stored in the options, the cache or the details.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from presentation_dependence.errors import ConfigError
from presentation_dependence.fields import check_counts, checked_options, opt
from presentation_dependence.io.atomic import atomic_write_text
from presentation_dependence.io.http import ApiClient, ApiRequestError
from presentation_dependence.models.embedded import cache_root
from presentation_dependence.presentations import draw_orders
from presentation_dependence.readout.prompt import clean_text, get_template
from presentation_dependence.records import Candidate, Query, RankResult
from presentation_dependence.rerankers.base import RERANKERS, Paradigm, RerankerOptions
from presentation_dependence.secrets import redact

__all__ = [
    "PARSER_VERSION",
    "ApiRequestError",
    "ClosedModelGenBscOptions",
    "ClosedModelGenBscReranker",
    "parse_grades",
]

logger = logging.getLogger(__name__)

PARSER_VERSION = "grade_lines_v1"
_LINE = re.compile(r"^\s*\[(\d+)\]\s*grade\s*:\s*(\d+)\s*$", re.IGNORECASE)
GRADE_LABELS = ("0", "1", "2", "3")


@dataclass(frozen=True)
class ClosedModelGenBscOptions(RerankerOptions):
    """Options of ClosedModelGenBscReranker (a hosted teacher writing grades as text)."""

    model: str = opt("gpt-4o-mini", "the API's model name")
    model_snapshot: str | None = opt(
        None, "the dated snapshot the cache is keyed on (e.g. gpt-4o-mini-2024-07-18); null = model"
    )
    base_url: str = opt("https://api.openai.com/v1", "OpenAI-compatible base URL")
    api_key_env: str = opt("OPENAI_API_KEY", "environment variable holding the API key")
    num_orders: int = opt(3, "K: shuffled presentations per query (K requests)")
    seed: int = opt(0, "presentations and retry jitter come from this seed")
    template: str = opt("pathc_grade_v1", "the user-turn template (docs/SCORING.md)")
    max_passage_chars: int | None = opt(1200, "cut each passage to this many characters")
    temperature: float = opt(0.0, "sampling temperature (part of the cache key)")
    top_p: float = opt(1.0, "nucleus sampling (part of the cache key)")
    max_tokens: int | None = opt(None, "answer budget; null = 12 per candidate + 16")
    max_concurrency: int = opt(4, "requests in flight at once")
    timeout_s: float = opt(60.0, "wall-clock deadline of one HTTP attempt (connect to last byte)")
    max_retries: int = opt(6, "retries per request on 429 / 5xx / timeout / malformed body")
    backoff_base_s: float = opt(1.0, "first backoff; doubles per retry, with jitter")
    backoff_max_s: float = opt(60.0, "cap on one backoff (and on Retry-After)")
    max_missing_fraction: float = opt(
        0.5, "a query fails when more of its grades than this fraction do not parse (1 = never)"
    )
    use_cache: bool = opt(True, "read and write the on-disk answer cache")
    cache_dir: str | None = opt(None, "cache folder; null = <presdep cache>/api-teacher")

    def __post_init__(self) -> None:
        for name in ("model", "base_url", "api_key_env"):
            v = getattr(self, name)
            if not isinstance(v, str) or not v:
                raise ConfigError(f"{name} must be a non-empty string, got {v!r}")
        check_counts(self, "num_orders", "max_concurrency")
        check_counts(self, "max_retries", "seed", minimum=0)
        for name in ("timeout_s", "backoff_max_s"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0:
                raise ConfigError(f"{name} must be a number > 0, got {v!r}")
        b = self.backoff_base_s
        if isinstance(b, bool) or not isinstance(b, (int, float)) or b < 0:
            raise ConfigError(f"backoff_base_s must be a number >= 0, got {b!r}")
        f = self.max_missing_fraction
        if isinstance(f, bool) or not isinstance(f, (int, float)) or not 0 <= f <= 1:
            raise ConfigError(f"max_missing_fraction must be a number in [0, 1], got {f!r}")
        if "://" not in self.base_url:
            raise ConfigError(f"base_url must be an http(s) URL, got {self.base_url!r}")
        get_template(self.template)


def parse_grades(text: str, n: int) -> tuple[list[int | None], int]:
    """Strictly parse ``[i] grade:g`` lines; return the grade per slot (None = missing) and the
    number of non-empty lines that were not a valid answer line.

    A slot answered twice is missing (conflict), as is a grade outside 0..3 or a slot > n.
    """
    found: dict[int, list[int]] = {}
    bad = 0
    for line in text.splitlines():
        if not line.strip():
            continue
        m = _LINE.match(line)
        if m is None:
            bad += 1
            continue
        slot, grade = int(m.group(1)), int(m.group(2))
        if not 1 <= slot <= n or not 0 <= grade <= 3:
            bad += 1
            continue
        found.setdefault(slot, []).append(grade)
    grades: list[int | None] = []
    for slot in range(1, n + 1):
        got = found.get(slot, [])
        grades.append(got[0] if len(got) == 1 else None)
        bad += max(0, len(got) - 1)
    return grades, bad


def _slot_grades(
    orders: Sequence[Sequence[int]], texts: Sequence[str], n: int
) -> tuple[list[list[int | None]], int]:
    """Each candidate's grade in every presentation (None where it did not parse), and the
    number of answer lines that did not parse."""
    grades: list[list[int | None]] = [[] for _ in range(n)]
    bad_lines = 0
    for order, text in zip(orders, texts, strict=True):
        parsed, bad = parse_grades(text, n)
        bad_lines += bad
        for slot, i in enumerate(order):
            grades[i].append(parsed[slot])
    return grades, bad_lines


def _mean_grades(
    grades: Sequence[Sequence[int | None]],
) -> tuple[np.ndarray, list[dict[str, Any]]]:
    """Each candidate's score, the mean of its parsed grades (0 when none parsed), and its
    grades as the result's item details."""
    scores = np.zeros(len(grades), dtype=np.float64)
    item_details: list[dict[str, Any]] = []
    for i, gs in enumerate(grades):
        ok = [g for g in gs if g is not None]
        scores[i] = float(np.mean(ok)) if ok else 0.0
        item_details.append(
            {"grades": gs, "parsed": len(ok), "missing": len(gs) - len(ok)}
            | ({"all_missing": True} if not ok else {})
        )
    return scores, item_details


@RERANKERS.register()
class ClosedModelGenBscReranker:
    """A hosted chat model writes an integer grade per candidate; grades averaged over K orders."""

    paradigm: ClassVar[Paradigm] = Paradigm.MITIGATION
    config_cls: ClassVar[type[RerankerOptions]] = ClosedModelGenBscOptions

    def __init__(self, options: RerankerOptions | None = None) -> None:
        self.options = opts = checked_options(self, options, ClosedModelGenBscOptions)
        self.client = ApiClient(opts)

    @property
    def cache_dir(self) -> Path:
        if self.options.cache_dir is not None:
            return Path(self.options.cache_dir).expanduser()
        return cache_root() / "api-teacher"

    def _payload(self, messages: list[dict[str, str]], n: int) -> dict[str, Any]:
        o = self.options
        return {
            "model": o.model,
            "messages": messages,
            "temperature": o.temperature,
            "top_p": o.top_p,
            "max_tokens": o.max_tokens if o.max_tokens is not None else 12 * n + 16,
            "seed": o.seed,
        }

    def cache_key(self, payload: Mapping[str, Any]) -> str:
        o = self.options
        fields = {
            "model_snapshot": o.model_snapshot or o.model,
            "messages": payload["messages"],
            "template": o.template,
            "parser": PARSER_VERSION,
            "sampling": {k: payload[k] for k in ("temperature", "top_p", "max_tokens", "seed")},
        }
        blob = json.dumps(fields, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def _answer(self, payload: dict[str, Any], n: int) -> tuple[str, str, bool]:
        """(answer text, responding model, cached?) for one presentation of ``n`` passages.
        An answer without a single parseable grade is not cached (a rerun asks again)."""
        key = self.cache_key(payload)
        path = self.cache_dir / key[:2] / f"{key}.json"
        if self.options.use_cache and path.is_file():
            try:
                hit = json.loads(path.read_text(encoding="utf-8"))
                return str(hit["content"]), str(hit.get("response_model", "")), True
            except (ValueError, KeyError):
                logger.warning("ignoring unreadable cache entry %s", path)
        body = self.client.post("chat/completions", payload)
        content = str(body["choices"][0]["message"]["content"])
        model = str(body.get("model", ""))
        if all(g is None for g in parse_grades(content, n)[0]):
            logger.warning("an answer with no parseable grade (not cached): %r", content[:200])
        elif self.options.use_cache:
            entry = {
                "key": key,
                "model_snapshot": self.options.model_snapshot or self.options.model,
                "response_model": model,
                "template": self.options.template,
                "parser": PARSER_VERSION,
                "payload": payload,
                "content": content,
            }
            atomic_write_text(path, json.dumps(entry, ensure_ascii=False, indent=1) + "\n")
        return content, model, False

    def rank(self, query: Query, candidates: Sequence[Candidate]) -> RankResult:
        o = self.options
        n = len(candidates)
        details: dict[str, Any] = {"template": o.template, "parser": PARSER_VERSION}
        if n == 0:
            return RankResult.from_scores(query, candidates, [], details=details)
        orders = draw_orders(n, query.qid, num_orders=o.num_orders, seed=o.seed)
        payloads = self._payloads(query, candidates, orders)
        calls0, retries0 = self.client.http_calls, self.client.retries
        with ThreadPoolExecutor(max_workers=min(o.max_concurrency, len(payloads))) as pool:
            answers = list(pool.map(lambda p: self._answer(p, n), payloads))
        grades, bad_lines = _slot_grades(orders, [text for text, _, _ in answers], n)
        scores, item_details = _mean_grades(grades)
        details.update(
            presentations=len(orders),
            orders=orders,
            missing_grades=sum(d["missing"] for d in item_details),
            all_missing_candidates=sum(1 for d in item_details if not d["parsed"]),
            invalid_lines=bad_lines,
            cache_hits=sum(1 for a in answers if a[2]),
            http_calls=self.client.http_calls - calls0,
            retries=self.client.retries - retries0,
            response_models=sorted({a[1] for a in answers if a[1]}),
        )
        self._check_missing(query, n, answers, details)
        return RankResult.from_scores(
            query, candidates, scores, item_details=item_details, details=details
        )

    def _payloads(
        self, query: Query, candidates: Sequence[Candidate], orders: Sequence[Sequence[int]]
    ) -> list[dict[str, Any]]:
        """One request per presentation: the template's prompt with the passages in its order."""
        o = self.options
        template = get_template(o.template)
        texts = [clean_text(c.text, o.max_passage_chars) for c in candidates]
        payloads = []
        for order in orders:
            user = template.render_user(
                clean_text(query.text), [texts[i] for i in order], GRADE_LABELS
            )
            payloads.append(self._payload([{"role": "user", "content": user}], len(candidates)))
        return payloads

    def _check_missing(
        self,
        query: Query,
        n: int,
        answers: Sequence[tuple[str, str, bool]],
        details: dict[str, Any],
    ) -> None:
        """Fail the query when more than ``max_missing_fraction`` of its grades did not parse;
        warn when any did not."""
        o = self.options
        total = n * details["presentations"]
        if details["missing_grades"] > o.max_missing_fraction * total:
            example = next(
                (a[0] for a in answers if all(g is None for g in parse_grades(a[0], n)[0])),
                answers[0][0],
            )
            raise ApiRequestError(
                f"query {query.qid!r}: {details['missing_grades']} of {total} grades did not "
                f"parse (more than max_missing_fraction {o.max_missing_fraction:g}), so the query "
                f"failed and nothing is written for it; answers without any grade are not "
                f"cached. An answer: {redact(example[:200])!r}. Fix: check the model and the "
                "template's answer format, or raise max_missing_fraction"
            )
        if details["missing_grades"]:
            logger.warning(
                "query %s: %d of %d grades unparseable (not credited), %d candidates with none",
                query.qid,
                details["missing_grades"],
                total,
                details["all_missing_candidates"],
            )

    def describe(self) -> dict[str, Any]:
        opts = asdict(self.options)  # holds the *name* of the key variable, never its value
        return {
            "reranker_class": type(self).__name__,
            "paradigm": self.paradigm.value,
            "model": self.options.model,
            "model_snapshot": self.options.model_snapshot or self.options.model,
            "parser": PARSER_VERSION,
            "template": self.options.template,
            "options": opts,
        }
