"""Response sets for ranking and judging: every loader returns :class:`ResponseItem` s.

Registered names (``data.dataset`` of a judge config):

==========================  ====================================================================
``gsm8k-model-solutions``   GSM8K test, 4 model solutions per problem with ``is_correct`` labels
``rm-bench``                RM-Bench: 3 chosen + 3 rejected (``chosen_index`` k: chosen[k] + the
                            3 rejected, 1 correct of 4)
``llmbar``                  LLMBar pairs (``label`` 1 or 2 names the better output)
``hh-rlhf-harmless``        HH-RLHF harmless-base test: the shared dialogue is the prompt, the two
                            final assistant turns the responses
``jsonl``                   ``{"id", "prompt", "responses": [...], "labels": [bool, ...]}`` lines
``reward-bench-2``          allenai/reward-bench-2 from the hub (needs ``datasets`` and network)
==========================  ====================================================================

Item ids are stable (file stem and line or record id), so seeded placements, which are drawn
from (seed, item id) by :mod:`~presentation_dependence.judge.placement`, do not depend on load
order. Loading never draws anything at random, and the hub loader iterates rows; it never calls
``datasets.map`` (whose fingerprint cache froze RewardBench 2's unseeded draw).
"""

from __future__ import annotations

import gzip
import json
import logging
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from presentation_dependence.errors import ConfigError, InputFormatError
from presentation_dependence.fields import opt
from presentation_dependence.judge.records import ResponseItem
from presentation_dependence.registry import Registry

__all__ = [
    "RESPONSE_SETS",
    "ResponseDataConfig",
    "default_shared_data",
    "load_response_set",
]

logger = logging.getLogger(__name__)

GSM8K_FIELDS = ("6b_finetuning", "6b_verification", "175b_finetuning", "175b_verification")


@dataclass(frozen=True)
class ResponseDataConfig:
    """The ``data`` block of a judge config."""

    dataset: str = opt(
        "gsm8k-model-solutions",
        "gsm8k-model-solutions | rm-bench | llmbar | hh-rlhf-harmless | jsonl | reward-bench-2",
    )
    path: str | None = opt(
        None, "file or folder; null = <shared data>/<dataset> ($PRESDEP_SHARED_DATA)"
    )
    files: list[str] = field(
        default_factory=list,
        metadata={"help": "file stems of a folder set to read (llmbar, rm-bench); [] = all"},
    )
    chosen_index: int | None = opt(None, "rm-bench: keep chosen[k] + the 3 rejected (1 of 4)")
    require_one_correct: bool = opt(False, "keep only items with exactly one correct response")
    max_items: int | None = opt(None, "first N items (file order)")
    revision: str | None = opt(None, "hub revision (reward-bench-2)")
    split: str = opt("test", "hub split (reward-bench-2)")

    def __post_init__(self) -> None:
        RESPONSE_SETS.get(self.dataset, key="data.dataset")  # at load, with a did-you-mean
        if self.max_items is not None and self.max_items < 1:
            raise ConfigError(f"data.max_items must be >= 1 or null, got {self.max_items}")
        if self.chosen_index is not None and not 0 <= self.chosen_index <= 2:
            raise ConfigError(f"data.chosen_index must be 0, 1 or 2, got {self.chosen_index}")


Loader = Callable[[ResponseDataConfig], Iterator[ResponseItem]]
RESPONSE_SETS: Registry[Loader] = Registry("response set")


def default_shared_data() -> Path:
    """``$PRESDEP_SHARED_DATA``, else ``<repo>/../shared/data`` (the clone layout)."""
    env = os.environ.get("PRESDEP_SHARED_DATA")
    if env:
        return Path(env).expanduser()
    return Path(__file__).resolve().parents[3].parent / "shared" / "data"


def _root(cfg: ResponseDataConfig) -> Path:
    p = Path(cfg.path).expanduser() if cfg.path is not None else default_shared_data() / cfg.dataset
    if not p.exists():
        raise ConfigError(
            f"data for {cfg.dataset!r} not found at {p}. Fix: set data.path or PRESDEP_SHARED_DATA"
        )
    return p


def _files(cfg: ResponseDataConfig, pattern: str) -> list[Path]:
    root = _root(cfg)
    if root.is_file():
        return [root]
    found = sorted(root.glob(pattern))
    if cfg.files:
        by_stem = {p.stem: p for p in found}
        missing = [s for s in cfg.files if s not in by_stem]
        if missing:
            raise ConfigError(
                f"data.files: {missing} not in {root} (have: {', '.join(sorted(by_stem))})"
            )
        found = [by_stem[s] for s in cfg.files]
    if not found:
        raise ConfigError(f"no {pattern} files under {root}")
    return found


def _json_list(path: Path) -> list[dict[str, Any]]:
    data = json.loads(path.read_text(encoding="utf-8-sig"))
    if not isinstance(data, list):
        raise InputFormatError(
            path, None, "a JSON list of items", type(data).__name__, "re-copy it"
        )
    return data


@RESPONSE_SETS.register("gsm8k-model-solutions")
def load_gsm8k_solutions(cfg: ResponseDataConfig) -> Iterator[ResponseItem]:
    """One item per problem; responses in the fixed field order of :data:`GSM8K_FIELDS`."""
    for path in _files(cfg, "*.jsonl"):
        with path.open(encoding="utf-8-sig") as fh:
            for lineno, line in enumerate(fh):
                if not line.strip():
                    continue
                d = json.loads(line)
                try:
                    sols = [d[k] for k in GSM8K_FIELDS]
                    yield ResponseItem(
                        item_id=f"gsm8k-test-{lineno:04d}",
                        prompt=str(d["question"]),
                        responses=tuple(str(s["solution"]) for s in sols),
                        labels=tuple(bool(s["is_correct"]) for s in sols),
                        source="gsm8k-model-solutions",
                    )
                except (KeyError, TypeError) as e:
                    raise InputFormatError(
                        path,
                        lineno + 1,
                        f"the fields question, {', '.join(GSM8K_FIELDS)}",
                        f"{type(e).__name__}: {e}",
                        "re-copy the file from grade-school-math",
                    ) from None


def _chosen_rejected(
    item_id: str, row: Mapping[str, Any], source: str, keep: int | None = None
) -> ResponseItem:
    """The chosen responses of ``row`` (only chosen[keep] with ``keep``), then its rejected."""
    chosen, rejected = [str(x) for x in row["chosen"]], [str(x) for x in row["rejected"]]
    if keep is not None:
        chosen = [chosen[keep]]
    return ResponseItem(
        item_id=item_id,
        prompt=str(row["prompt"]),
        responses=tuple(chosen + rejected),
        labels=tuple([True] * len(chosen) + [False] * len(rejected)),
        source=source,
        subset=str(row.get("subset", "")),
    )


@RESPONSE_SETS.register("rm-bench")
def load_rm_bench(cfg: ResponseDataConfig) -> Iterator[ResponseItem]:
    """3 chosen + 3 rejected per prompt, or chosen[k] + 3 rejected with ``chosen_index`` k."""
    for path in _files(cfg, "*.json"):
        for d in _json_list(path):
            yield _chosen_rejected(
                f"rm-bench-{path.stem}-{d['id']}", d, "rm-bench", cfg.chosen_index
            )


@RESPONSE_SETS.register("llmbar")
def load_llmbar(cfg: ResponseDataConfig) -> Iterator[ResponseItem]:
    """Pairs ``(output_1, output_2)``; ``label`` 1 or 2 is the better one."""
    for path in _files(cfg, "*.json"):
        for idx, d in enumerate(_json_list(path)):
            label = int(d["label"])
            if label not in (1, 2):
                raise InputFormatError(path, None, "label 1 or 2", repr(d["label"]), "fix item")
            yield ResponseItem(
                item_id=f"llmbar-{path.stem}-{idx:03d}",
                prompt=str(d["input"]),
                responses=(str(d["output_1"]), str(d["output_2"])),
                labels=(label == 1, label == 2),
                source="llmbar",
                subset=path.stem,
            )


_ASSISTANT = "\n\nAssistant:"


def _split_dialogue(text: str) -> tuple[str, str]:
    cut = text.rfind(_ASSISTANT)
    if cut < 0:
        raise ValueError("no assistant turn")
    return text[:cut].strip(), text[cut + len(_ASSISTANT) :].strip()


@RESPONSE_SETS.register("hh-rlhf-harmless")
def load_hh_rlhf(cfg: ResponseDataConfig) -> Iterator[ResponseItem]:
    """Prompt = the dialogue before the last assistant turn; responses = (chosen, rejected)
    final turns. Pairs whose dialogues differ before that turn are skipped (logged)."""
    skipped = 0
    for path in _files(cfg, "*.jsonl.gz"):
        with gzip.open(path, "rt", encoding="utf-8-sig") as fh:
            for lineno, line in enumerate(fh):
                d = json.loads(line)
                try:
                    p_c, r_c = _split_dialogue(str(d["chosen"]))
                    p_r, r_r = _split_dialogue(str(d["rejected"]))
                except ValueError:
                    skipped += 1
                    continue
                if p_c != p_r:
                    skipped += 1
                    continue
                yield ResponseItem(
                    item_id=f"hh-rlhf-harmless-test-{lineno:04d}",
                    prompt=p_c,
                    responses=(r_c, r_r),
                    labels=(True, False),
                    source="hh-rlhf-harmless",
                )
    if skipped:
        logger.info("hh-rlhf-harmless: skipped %d pairs without one shared dialogue", skipped)


@RESPONSE_SETS.register("jsonl")
def load_jsonl(cfg: ResponseDataConfig) -> Iterator[ResponseItem]:
    """Generic: ``{"id", "prompt", "responses": [str], "labels": [bool]}`` per line."""
    for path in _files(cfg, "*.jsonl"):
        for lineno, line in enumerate(path.read_text(encoding="utf-8-sig").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                d = json.loads(line)
                yield ResponseItem(
                    item_id=str(d["id"]),
                    prompt=str(d["prompt"]),
                    responses=tuple(str(r) for r in d["responses"]),
                    labels=tuple(bool(x) for x in d["labels"]),
                    source=str(d.get("source", path.stem)),
                    subset=str(d.get("subset", "")),
                )
            except (ValueError, KeyError, TypeError) as e:
                raise InputFormatError(
                    path,
                    lineno,
                    'an object {"id", "prompt", "responses", "labels"}',
                    f"{type(e).__name__}: {e}",
                    "write one such object per line",
                ) from None


@RESPONSE_SETS.register("reward-bench-2")
def load_reward_bench_2(cfg: ResponseDataConfig) -> Iterator[ResponseItem]:
    """allenai/reward-bench-2 from the hub: chosen (1, or several in Ties) + rejected.

    Rows are read one by one; nothing is mapped or cached with a random draw inside.
    """
    try:
        import datasets
    except ImportError:
        raise ConfigError(
            "reward-bench-2 is read from the hub with the 'datasets' package, which is not "
            "installed. Fix: pip install datasets (needs network), or use a local set"
        ) from None
    ds = datasets.load_dataset("allenai/reward-bench-2", split=cfg.split, revision=cfg.revision)
    for row in ds:
        yield _chosen_rejected(f"rb2-{row['id']}", row, "reward-bench-2")


def load_response_set(cfg: ResponseDataConfig) -> list[ResponseItem]:
    """The items of ``cfg.dataset``: optionally only those with one correct response, then the
    first ``max_items``. Items without a correct or without an incorrect response are kept for
    ranking; the judge needs exactly one correct (``require_one_correct``)."""
    loader = RESPONSE_SETS.get(cfg.dataset)
    out: list[ResponseItem] = []
    seen: set[str] = set()
    dropped = 0
    for item in loader(cfg):
        if item.item_id in seen:
            raise ConfigError(f"{cfg.dataset}: duplicate item id {item.item_id!r}")
        seen.add(item.item_id)
        if cfg.require_one_correct and item.num_correct != 1:
            dropped += 1
            continue
        out.append(item)
        if cfg.max_items is not None and len(out) >= cfg.max_items:
            break
    logger.info(
        "%s: %d items%s",
        cfg.dataset,
        len(out),
        f" ({dropped} without exactly one correct response dropped)" if dropped else "",
    )
    return out
