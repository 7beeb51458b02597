"""A frozen generative reader: answer a question from given paragraphs, greedily, once.

The reader is configured by ``configs/reader/<name>.yaml`` (:class:`ReaderConfig`, loaded
strictly: unknown keys are errors). It renders template ``qa_short_v1`` (below) as one user turn
through the model's own chat template (``add_generation_prompt=True``), then decodes greedily
(``do_sample=False``, one beam, temperature unused) for at most ``max_new_tokens`` tokens with
``torch.manual_seed(seed)`` set before every call. Paragraph lines are ``[i] <text>`` with
whitespace collapsed and each paragraph cut to ``max_passage_chars`` characters.

The prompt hash is the sha256 of the exact rendered prompt text (chat template included). With
the cache on (``qa.cache_answers``), a prompt whose hash was read before in this process is not
generated again: its answer is reused and the answer is marked ``cached``. So presentations
that retain the same paragraphs (in the same reader order) cost one generation.
The short answer is the first non-empty line of the generated text
(:func:`~presentation_dependence.qa.scoring.extract_answer`); the raw text is kept as well.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

from presentation_dependence.config.loader import load_config
from presentation_dependence.errors import ConfigError
from presentation_dependence.fields import build_dataclass, check_counts, opt
from presentation_dependence.metrics.decisions import normalize_answer
from presentation_dependence.models.embedded import resolve_model
from presentation_dependence.qa.scoring import extract_answer
from presentation_dependence.readout.options import ThreadedModelOptions
from presentation_dependence.readout.prompt import clean_text

__all__ = [
    "READER_TEMPLATES",
    "FrozenReader",
    "Reader",
    "ReaderAnswer",
    "ReaderConfig",
    "load_reader_config",
    "resolve_reader_path",
]

logger = logging.getLogger(__name__)

READER_DIR = Path("configs") / "reader"
_REPO_READER_DIR = Path(__file__).resolve().parents[3] / READER_DIR

# The user turn of reader template ``qa_short_v1``: {paragraphs} are the "[i] text" lines. The
# one-shot example keeps a small model's answer short (measured on 12 HotpotQA dev questions with
# their gold paragraphs, SmolLM2-135M: token F1 0.16 with it, 0.10 without; docs/QA.md).
QA_SHORT_V1 = """\
Answer the question with a short phrase (a name, a date, a number, or yes/no), not a sentence.

Example
Paragraphs:
[1] Paris: Paris is the capital and largest city of France.
Question: What is the capital of France?
Answer: Paris

Paragraphs:
{paragraphs}
Question: {question}
Answer:"""

READER_TEMPLATES: dict[str, str] = {"qa_short_v1": QA_SHORT_V1}
NO_PARAGRAPHS = "(none)"


@dataclass(frozen=True)
class ReaderConfig(ThreadedModelOptions):
    """A frozen reader: model, decoding budget and prompt template (``configs/reader/*.yaml``)."""

    name: str = opt("reader", "the file stem (set automatically)")
    description: str = opt("", "one line")
    dtype: str = opt("float32", "float32, bfloat16, float16 or auto")
    max_new_tokens: int = opt(16, "greedy decoding budget")
    seed: int = opt(0, "torch.manual_seed before every read")
    max_passage_chars: int | None = opt(1200, "cut each paragraph to this many characters")
    template: str = opt("qa_short_v1", "reader prompt template id")

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.template not in READER_TEMPLATES:
            raise ConfigError(
                f"reader: unknown template {self.template!r}; known: {sorted(READER_TEMPLATES)}"
            )
        if not 1 <= self.max_new_tokens <= 512:
            raise ConfigError(
                f"reader: max_new_tokens must be in 1..512, got {self.max_new_tokens}"
            )
        check_counts(self, "max_passage_chars", nullable=True)
        if self.seed < 0:
            raise ConfigError("reader: seed must be >= 0")


def resolve_reader_path(spec: str) -> Path:
    """``spec`` as a YAML path if it is one, else ``configs/reader/<spec>.yaml`` (working
    directory first, then the repository this package sits in)."""
    direct = Path(spec).expanduser()
    if spec.endswith((".yaml", ".yml")) or "/" in spec:
        if direct.is_file():
            return direct
        raise ConfigError(f"qa.reader: no reader config at {spec}")
    tried = [READER_DIR / f"{spec}.yaml", _REPO_READER_DIR / f"{spec}.yaml"]
    for p in tried:
        if p.is_file():
            return p
    raise ConfigError(
        f"qa.reader: no reader config named {spec!r} (looked at {', '.join(map(str, tried))})"
    )


def load_reader_config(spec: str) -> ReaderConfig:
    """Load a reader config strictly (environment: ``PRESDEP_READER__KEY=value``); its ``name``
    is the file stem."""

    def build(raw: dict[str, Any], stem: str) -> ReaderConfig:
        if raw.get("name", stem) != stem:
            raise ConfigError(f"name {raw['name']!r} differs from the file name; remove it")
        return build_dataclass(ReaderConfig, {**raw, "name": stem})

    return load_config(resolve_reader_path(spec), build, family="reader")


@dataclass(frozen=True)
class ReaderAnswer:
    """One read: the prompt's hash, what was generated, the short and normalised answer."""

    prompt_hash: str
    raw_answer: str
    answer: str
    normalized_answer: str
    cached: bool
    reader_prompt_tokens: int
    generated_tokens: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Reader(Protocol):
    """What the QA runner needs from a reader."""

    def read(self, question: str, paragraphs: Sequence[str]) -> ReaderAnswer: ...

    def describe(self) -> dict[str, Any]: ...


class FrozenReader:
    """Greedy, seeded, short-answer reading with the transformers backend (lazy model load)."""

    def __init__(self, cfg: ReaderConfig, *, cache: bool = True) -> None:
        self.cfg = cfg
        self.cache_enabled = cache
        self._cache: dict[str, tuple[str, int, int]] = {}
        self._backend: Any = None
        self._revision: str | None = None
        self._source: str | None = None
        self.reads = 0
        self.generations = 0
        self.seconds = 0.0

    def _ensure_loaded(self) -> Any:
        if self._backend is None:
            from presentation_dependence.readout.backend import TransformersBackend

            resolved = resolve_model(self.cfg.model_name, self.cfg.revision)
            self._backend = TransformersBackend.load(
                resolved.path,
                revision=resolved.revision if resolved.source == "hub" else None,
                dtype=self.cfg.dtype,
                device=self.cfg.device,
                trust_remote_code=self.cfg.trust_remote_code,
            )
            self._revision, self._source = resolved.revision, resolved.source
            if getattr(self._backend.tokenizer, "chat_template", None) is None:
                raise ConfigError(f"reader model {self.cfg.model_name} has no chat template")
        return self._backend

    def user_turn(self, question: str, paragraphs: Sequence[str]) -> str:
        """The template filled in: paragraph lines ``[i] text``, then the question."""
        lines = [
            f"[{i}] {clean_text(p, self.cfg.max_passage_chars)}"
            for i, p in enumerate(paragraphs, start=1)
        ]
        return READER_TEMPLATES[self.cfg.template].format(
            paragraphs="\n".join(lines) if lines else NO_PARAGRAPHS, question=clean_text(question)
        )

    def prompt_text(self, question: str, paragraphs: Sequence[str]) -> str:
        """The exact text the model sees (chat template applied); its sha256 is the hash."""
        tok = self._ensure_loaded().tokenizer
        text = tok.apply_chat_template(
            [{"role": "user", "content": self.user_turn(question, paragraphs)}],
            tokenize=False,
            add_generation_prompt=True,
        )
        return str(text)

    def read(self, question: str, paragraphs: Sequence[str]) -> ReaderAnswer:
        text = self.prompt_text(question, paragraphs)
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        self.reads += 1
        cached = self.cache_enabled and digest in self._cache
        if cached:
            raw, n_prompt, n_new = self._cache[digest]
        else:
            raw, n_prompt, n_new = self._generate(text)
            if self.cache_enabled:
                self._cache[digest] = (raw, n_prompt, n_new)
        answer = extract_answer(raw)
        return ReaderAnswer(digest, raw, answer, normalize_answer(answer), cached, n_prompt, n_new)

    def _generate(self, text: str) -> tuple[str, int, int]:
        import torch
        from transformers import GenerationConfig

        backend = self._ensure_loaded()
        tok, model = backend.tokenizer, backend.model
        ids = tok(text, add_special_tokens=False, return_tensors="pt")["input_ids"]
        n_prompt = int(ids.shape[1])
        limit = backend.max_context
        if limit is not None and n_prompt + self.cfg.max_new_tokens > limit:
            raise ConfigError(
                f"reader prompt of {n_prompt} tokens + {self.cfg.max_new_tokens} new tokens is "
                f"over the model's context ({limit}); lower the reader's max_passage_chars"
            )
        eos = model.generation_config.eos_token_id
        gen = GenerationConfig(
            max_new_tokens=self.cfg.max_new_tokens,
            do_sample=False,
            num_beams=1,
            pad_token_id=backend.pad_token_id,
            eos_token_id=eos if eos is not None else tok.eos_token_id,
        )
        if self.cfg.num_threads is not None:
            torch.set_num_threads(self.cfg.num_threads)
        torch.manual_seed(self.cfg.seed)
        t0 = time.perf_counter()
        with torch.inference_mode():
            out = model.generate(
                input_ids=ids.to(backend.device),
                attention_mask=torch.ones_like(ids).to(backend.device),
                generation_config=gen,
            )
        self.seconds += time.perf_counter() - t0
        self.generations += 1
        new = out[0, n_prompt:]
        return tok.decode(new, skip_special_tokens=True), n_prompt, int(new.shape[0])

    def stats(self) -> dict[str, Any]:
        """Reads, generations run, reads answered from the cache, seconds generating."""
        return {
            "reads": self.reads,
            "generations": self.generations,
            "cache_hits": self.reads - self.generations,
            "generate_seconds": round(self.seconds, 3),
        }

    def describe(self) -> dict[str, Any]:
        backend = self._ensure_loaded()
        info = backend.describe()
        return {
            "reader": self.cfg.name,
            "model_name": self.cfg.model_name,
            "resolved_path": backend.path,
            "model_source": self._source,
            "revision": self._revision,
            "dtype": info["dtype"],
            "device": info["device"],
            "decoding": {
                "do_sample": False,
                "num_beams": 1,
                "temperature": 0,
                "max_new_tokens": self.cfg.max_new_tokens,
                "seed": self.cfg.seed,
            },
            "template": self.cfg.template,
            "cache_answers": self.cache_enabled,
            "config": asdict(self.cfg),
            "torch": info["torch"],
            "transformers": info["transformers"],
        }
