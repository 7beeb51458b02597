"""The generative judge against an OpenAI-compatible server (``judge_class: openai-completions``).

The prompt is the transformers judge's, token for token: the same template and user turn,
rendered with the chat template of a local copy of the served model (``model_name``: only its
tokenizer is loaded), the ``answer_prefix`` appended, and sent as token ids to
``<base_url>/completions`` (greedy: temperature 0, the seed sent with every request). The
answer's text goes through the same parser; its token ids come back when the server honours
``return_token_ids`` (vLLM does; the end-of-sequence token is dropped, as the transformers judge
drops it), else the record has none and reruns are compared on text.

``concurrency`` requests are in flight at once. ``presdep noise`` passes its batch size per
condition (``batch_size`` overrides the concurrency of that pass; ``one_at_a_time`` is 1): what
a server batches is what is in flight, so a condition is a load on the server.

With ``server_metrics: true`` the server's Prometheus ``/metrics`` is read before and after
each pass and sampled while it runs, and :attr:`ApiJudge.passes` gets one :class:`PassStats`
per pass: the running and waiting requests (largest and mean over the samples) and the
preemptions counted during the pass (vLLM's ``vllm:num_requests_running``,
``vllm:num_requests_waiting``, ``vllm:num_preemptions_total``; a server without them gives
``None``). These are not part of the records, which stay free of timings.

Identity: ``judge_class`` ``openai-completions``, the local copy's snapshot (the embedded GGUF
hash, a folder's content hash, or the hub commit), the prompt and parser versions and the seed.
The server is asked which models it serves (``GET /models``); when the one served does not name
the local copy's folder as its root, a warning says the snapshot is the local copy's. Its
software version is recorded in ``describe()`` when it tells it (vLLM's ``GET /version``), else
``None``.
"""

from __future__ import annotations

import logging
import threading
import time
import urllib.request
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

from presentation_dependence.errors import ConfigError
from presentation_dependence.fields import check_counts, opt
from presentation_dependence.io.http import ApiClient, get_json, post_with_deadline
from presentation_dependence.judge.items.records import JudgeRecord, JudgeRequest
from presentation_dependence.judge.judges.base import JUDGES, JudgeOptions, describe_judge
from presentation_dependence.judge.judges.generation import Generation, model_snapshot
from presentation_dependence.judge.judges.generative import (
    GenerativeChatJudge,
    GenerativeJudgeOptions,
    check_prompt_options,
)
from presentation_dependence.models.embedded import resolve_model

__all__ = ["ApiJudge", "ApiJudgeOptions", "PassStats", "merge_pass_stats", "parse_prometheus"]

logger = logging.getLogger(__name__)

RUNNING = "vllm:num_requests_running"
WAITING = "vllm:num_requests_waiting"
PREEMPTIONS = "vllm:num_preemptions_total"


@dataclass(frozen=True)
class ApiJudgeOptions(GenerativeJudgeOptions):
    """Options of the generative judge on an OpenAI-compatible completions server."""

    base_url: str = opt("http://127.0.0.1:8000/v1", "the server's OpenAI-compatible base URL")
    served_model: str = opt("", "the model name the server serves; '' = the first it lists")
    model_name: str = opt(
        "embedded:smollm2-135m-instruct",
        "a local copy of the served model: its tokenizer renders the prompt, its snapshot is "
        "the identity",
    )
    revision: str | None = opt(None, "hub revision of the local copy; null = default")
    seed: int = opt(0, "sent with every request (decoding is greedy: temperature 0)")
    concurrency: int = opt(1, "requests in flight at once (presdep noise sets it per condition)")
    api_key_env: str = opt("OPENAI_API_KEY", "environment variable with the key, if any")
    timeout_s: float = opt(600.0, "wall-clock deadline of one request")
    max_retries: int = opt(2, "retries per request on 429 / 5xx / timeout / malformed body")
    backoff_base_s: float = opt(1.0, "first backoff; doubles per retry, with seeded jitter")
    backoff_max_s: float = opt(30.0, "cap on one backoff")
    server_metrics: bool = opt(True, "read the server's /metrics around and during each pass")
    metrics_interval_s: float = opt(0.25, "seconds between /metrics samples during a pass")

    def __post_init__(self) -> None:
        check_prompt_options(self)
        check_counts(self, "concurrency")
        for name in ("base_url", "model_name", "api_key_env"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name):
                raise ConfigError(f"{name} must be a non-empty string")
        if "://" not in self.base_url:
            raise ConfigError(f"base_url must be an http(s) URL, got {self.base_url!r}")
        for name in ("timeout_s", "backoff_max_s", "metrics_interval_s"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0:
                raise ConfigError(f"{name} must be a number > 0, got {v!r}")


def parse_prometheus(text: str) -> dict[str, float]:
    """Each metric's value summed over its label sets (Prometheus text format)."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name_labels, _, value = line.rpartition(" ")
        name = name_labels.split("{", 1)[0].strip()
        try:
            out[name] = out.get(name, 0.0) + float(value)
        except ValueError:
            continue
    return out


@dataclass(frozen=True)
class PassStats:
    """One pass of requests: its load and what the server reported while it ran."""

    requests: int
    concurrency: int
    seconds: float
    samples: int
    running_max: float | None
    running_mean: float | None
    waiting_max: float | None
    preemptions: float | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def merge_pass_stats(passes: Sequence[Mapping[str, Any] | None]) -> dict[str, Any] | None:
    """The passes of one run (its parts) as one: counts and seconds summed, maxima of maxima,
    the running mean weighted by samples, preemptions summed (None when a pass has none)."""
    got = [p for p in passes if p is not None]
    if not got:
        return None

    def top(key: str) -> float | None:
        vals = [p[key] for p in got if p.get(key) is not None]
        return max(vals) if vals else None

    weighted = [(p["running_mean"], p["samples"]) for p in got if p.get("running_mean") is not None]
    samples = sum(w for _, w in weighted)
    pre = [p.get("preemptions") for p in got]
    return {
        "requests": sum(p["requests"] for p in got),
        "concurrency": top("concurrency"),
        "seconds": sum(p["seconds"] for p in got),
        "samples": sum(p["samples"] for p in got),
        "running_max": top("running_max"),
        "running_mean": sum(m * w for m, w in weighted) / samples if samples else None,
        "waiting_max": top("waiting_max"),
        "preemptions": None if None in pre else sum(x for x in pre if x is not None),
    }


class _Sampler:
    """Reads ``/metrics`` every ``interval`` seconds in a daemon thread while a pass runs."""

    def __init__(self, url: str, interval: float, timeout_s: float) -> None:
        self.url, self.interval, self.timeout_s = url, interval, timeout_s
        self.samples: list[dict[str, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def read(self) -> dict[str, float] | None:
        try:
            req = urllib.request.Request(self.url, method="GET")
            return parse_prometheus(post_with_deadline(req, self.timeout_s).decode("utf-8"))
        except (OSError, ValueError) as e:
            logger.debug("no metrics from %s: %s", self.url, e)
            return None

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            got = self.read()
            if got is not None:
                self.samples.append(got)

    def __enter__(self) -> _Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _stats(
    n: int, conc: int, secs: float, samples: Sequence[Mapping[str, float]], before: Any, after: Any
) -> PassStats:
    def series(name: str) -> list[float]:
        return [s[name] for s in samples if name in s]

    running, waiting = series(RUNNING), series(WAITING)
    pre = None
    if before is not None and after is not None and PREEMPTIONS in before and PREEMPTIONS in after:
        pre = after[PREEMPTIONS] - before[PREEMPTIONS]
    return PassStats(
        requests=n,
        concurrency=conc,
        seconds=secs,
        samples=len(samples),
        running_max=max(running) if running else None,
        running_mean=sum(running) / len(running) if running else None,
        waiting_max=max(waiting) if waiting else None,
        preemptions=pre,
    )


class _Tokenizer:
    """The local copy's tokenizer (what :class:`ChatModelJudge` loads for this judge)."""

    def __init__(self, path: str, tokenizer: Any) -> None:
        self.path, self.tokenizer = path, tokenizer


@JUDGES.register("openai-completions")
class ApiJudge(GenerativeChatJudge):
    """The N-way generative judge on an OpenAI-compatible ``/completions`` server."""

    config_cls: ClassVar[type[JudgeOptions]] = ApiJudgeOptions
    judge_class: ClassVar[str] = "openai-completions"
    options: ApiJudgeOptions

    def __init__(self, options: JudgeOptions | None = None) -> None:
        super().__init__(options)
        self.client = ApiClient(self.options)
        self.passes: list[PassStats] = []
        self._served: str | None = None

    def _load(self) -> Any:
        if self._backend is None:
            from transformers import AutoTokenizer

            o = self.options
            resolved = resolve_model(o.model_name, o.revision)
            tok = AutoTokenizer.from_pretrained(resolved.path, revision=resolved.revision)
            self._backend = _Tokenizer(resolved.path, tok)
            self._snapshot = model_snapshot(resolved.source, resolved.path, resolved.revision)
        return self._backend

    def served_model(self) -> str:
        """The model name requests carry: ``served_model``, or the first the server lists
        (checked once against the local copy's folder)."""
        if self._served is None:
            o = self.options
            listed = get_json(o.base_url.rstrip("/") + "/models", o.timeout_s).get("data") or []
            names = {str(m.get("id")): str(m.get("root", "")) for m in listed}
            name = o.served_model or next(iter(names), "")
            if not name or name not in names:
                raise ConfigError(
                    f"{o.base_url} serves {sorted(names)}, not {name!r}. Fix: served_model"
                )
            if names[name] != self._load().path:
                logger.warning(
                    "%s serves %r from %r; the identity is the local copy %r's",
                    o.base_url,
                    name,
                    names[name],
                    self._load().path,
                )
            self._served = name
        return self._served

    def server_version(self) -> str | None:
        """The server's version from ``GET /version`` (vLLM's), or ``None`` when it has none."""
        root = self.options.base_url.rstrip("/").removesuffix("/v1")
        try:
            version = get_json(root + "/version", min(self.options.timeout_s, 10.0)).get("version")
        except (OSError, ValueError, AttributeError):
            return None
        return None if version is None else str(version)

    def _ask(self, ids: Sequence[int]) -> Generation:
        o = self.options
        payload = {
            "model": self.served_model(),
            "prompt": list(ids),
            "max_tokens": o.max_new_tokens,
            "temperature": 0.0,
            "seed": o.seed,
            "return_token_ids": True,
        }
        choice = self.client.post("completions", payload)["choices"][0]
        eos = self._load().tokenizer.eos_token_id
        tokens = tuple(int(t) for t in choice.get("token_ids") or ())
        if tokens and tokens[-1] == eos:
            tokens = tokens[:-1]
        finish = "length" if choice.get("finish_reason") == "length" else "eos"
        return Generation(tokens, str(choice["text"]), finish, len(ids))

    def judge(
        self,
        requests: Sequence[JudgeRequest],
        *,
        batch_size: int | None = None,
        one_at_a_time: bool | None = None,
    ) -> list[JudgeRecord]:
        o = self.options
        prompts = [self.prompt_ids(r) for r in requests]
        conc = 1 if one_at_a_time else (batch_size or o.concurrency)
        self.served_model()
        root = o.base_url.rstrip("/").removesuffix("/v1") + "/metrics"
        sampler = _Sampler(root, o.metrics_interval_s, min(o.timeout_s, 10.0))
        before = sampler.read() if o.server_metrics else None
        t0 = time.perf_counter()
        with (
            ThreadPoolExecutor(max_workers=conc) as pool,
            sampler if o.server_metrics else nullcontext(),
        ):
            answers = list(pool.map(self._ask, prompts))
        secs = time.perf_counter() - t0
        after = sampler.read() if o.server_metrics else None
        stats = _stats(len(prompts), conc, secs, sampler.samples, before, after)
        self.passes.append(stats)
        logger.info("judged %d prompts at concurrency %d in %.1f s", len(prompts), conc, secs)
        return [self.record(r, g) for r, g in zip(requests, answers, strict=True)]

    def describe(self) -> dict[str, Any]:
        return describe_judge(
            self.judge_class,
            self.identity(),
            self.options,
            served_model=self.served_model(),
            server_version=self.server_version(),
            decoding="greedy (temperature 0)",
        )
