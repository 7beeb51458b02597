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

Fields are read by :mod:`~presentation_dependence.judge.items.item_fields`: labels are parsed, never
coerced (a JSON boolean; LLMBar's integer 1 or 2), and any malformed line or item is an
``InputFormatError`` naming the file, the line or item and the fix.

Item ids are stable (file stem and line or record id), so seeded placements, which are drawn
from (seed, item id) by :mod:`~presentation_dependence.judge.placement`, do not depend on load
order. Loading never draws anything at random, and the hub loader iterates rows; it never calls
``datasets.map`` (whose fingerprint cache froze RewardBench 2's unseeded draw).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from presentation_dependence.errors import ConfigError
from presentation_dependence.fields import opt
from presentation_dependence.judge.items.item_fields import Site, json_lines, json_list
from presentation_dependence.judge.items.records import ResponseItem
from presentation_dependence.optional import import_optional
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
RESPONSE_SETS: Registry[Loader] = Registry(
    "response set", entry_points="presentation_dependence.response_sets"
)


def default_shared_data() -> Path:
    """``$PRESDEP_SHARED_DATA``, else ``<repo>/../shared/data`` (the clone layout)."""
    env = os.environ.get("PRESDEP_SHARED_DATA")
    if env:
        return Path(env).expanduser()
    # judge/items/loaders.py -> items, judge, presentation_dependence, src, <repo>, its parent
    return Path(__file__).resolve().parents[5] / "shared" / "data"


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


GSM8K_FIX = "re-copy the file from grade-school-math (SOURCE.md), or fix this line"
RM_BENCH_FIX = "re-copy the file from RM-Bench (SOURCE.md), or fix this item"
LLMBAR_FIX = "re-copy the file from LLMBar (SOURCE.md), or fix this item"
HH_FIX = "re-copy the file from hh-rlhf (SOURCE.md), or fix this line"
JSONL_FIX = 'write one {"id", "prompt", "responses": [...], "labels": [true, ...]} per line'


@RESPONSE_SETS.register("gsm8k-model-solutions")
def load_gsm8k_solutions(cfg: ResponseDataConfig) -> Iterator[ResponseItem]:
    """One item per problem; responses in the fixed field order of :data:`GSM8K_FIELDS`."""
    for path in _files(cfg, "*.jsonl"):
        for site, d in json_lines(path, GSM8K_FIX):
            sols = {k: site.part(d, k) for k in GSM8K_FIELDS}
            yield site.response_item(
                item_id=f"gsm8k-test-{site.position:04d}",
                prompt=site.text(d, "question"),
                responses=tuple(site.text(s, "solution", k) for k, s in sols.items()),
                labels=tuple(
                    site.boolean(site.field(s, "is_correct", k), f"{k}.is_correct")
                    for k, s in sols.items()
                ),
                source="gsm8k-model-solutions",
            )


def _chosen_rejected(
    site: Site, item_id: str, row: Mapping[str, Any], source: str, keep: int | None = None
) -> ResponseItem:
    """The chosen responses of ``row`` (only chosen[keep] with ``keep``), then its rejected."""
    chosen, rejected = site.texts(row, "chosen"), site.texts(row, "rejected")
    if keep is not None:
        if keep >= len(chosen):
            raise site.error(f"chosen[{keep}] (data.chosen_index)", f"{len(chosen)} chosen")
        chosen = [chosen[keep]]
    return site.response_item(
        item_id=item_id,
        prompt=site.text(row, "prompt"),
        responses=tuple(chosen + rejected),
        labels=tuple([True] * len(chosen) + [False] * len(rejected)),
        source=source,
        subset=site.text(row, "subset") if "subset" in row else "",
    )


@RESPONSE_SETS.register("rm-bench")
def load_rm_bench(cfg: ResponseDataConfig) -> Iterator[ResponseItem]:
    """3 chosen + 3 rejected per prompt, or chosen[k] + 3 rejected with ``chosen_index`` k."""
    for path in _files(cfg, "*.json"):
        for site, d in json_list(path, RM_BENCH_FIX):
            item_id = f"rm-bench-{path.stem}-{site.ident(d, 'id')}"
            yield _chosen_rejected(site, item_id, d, "rm-bench", cfg.chosen_index)


@RESPONSE_SETS.register("llmbar")
def load_llmbar(cfg: ResponseDataConfig) -> Iterator[ResponseItem]:
    """Pairs ``(output_1, output_2)``; ``label`` 1 or 2 (a JSON integer) is the better one."""
    for path in _files(cfg, "*.json"):
        for site, d in json_list(path, LLMBAR_FIX):
            label = site.choice(d, "label", (1, 2))
            yield site.response_item(
                item_id=f"llmbar-{path.stem}-{site.position:03d}",
                prompt=site.text(d, "input"),
                responses=(site.text(d, "output_1"), site.text(d, "output_2")),
                labels=(label == 1, label == 2),
                source="llmbar",
                subset=path.stem,
            )


_ASSISTANT = "\n\nAssistant:"


def _split_dialogue(text: str) -> tuple[str, str] | None:
    cut = text.rfind(_ASSISTANT)
    if cut < 0:
        return None  # no assistant turn
    return text[:cut].strip(), text[cut + len(_ASSISTANT) :].strip()


@RESPONSE_SETS.register("hh-rlhf-harmless")
def load_hh_rlhf(cfg: ResponseDataConfig) -> Iterator[ResponseItem]:
    """Prompt = the dialogue before the last assistant turn; responses = (chosen, rejected)
    final turns. Pairs whose dialogues differ before that turn are skipped (logged)."""
    skipped = 0
    for path in _files(cfg, "*.jsonl.gz"):
        for site, d in json_lines(path, HH_FIX):
            chosen = _split_dialogue(site.text(d, "chosen"))
            rejected = _split_dialogue(site.text(d, "rejected"))
            if chosen is None or rejected is None or chosen[0] != rejected[0]:
                skipped += 1
                continue
            yield site.response_item(
                item_id=f"hh-rlhf-harmless-test-{site.position:04d}",
                prompt=chosen[0],
                responses=(chosen[1], rejected[1]),
                labels=(True, False),
                source="hh-rlhf-harmless",
            )
    if skipped:
        logger.info("hh-rlhf-harmless: skipped %d pairs without one shared dialogue", skipped)


@RESPONSE_SETS.register("jsonl")
def load_jsonl(cfg: ResponseDataConfig) -> Iterator[ResponseItem]:
    """Generic: ``{"id", "prompt", "responses": [str], "labels": [bool]}`` per line (labels are
    JSON booleans; ``source`` and ``subset`` optional strings)."""
    for path in _files(cfg, "*.jsonl"):
        for site, d in json_lines(path, JSONL_FIX):
            yield site.response_item(
                item_id=site.ident(d, "id"),
                prompt=site.text(d, "prompt"),
                responses=tuple(site.texts(d, "responses")),
                labels=site.booleans(d, "labels"),
                source=site.text(d, "source") if "source" in d else path.stem,
                subset=site.text(d, "subset") if "subset" in d else "",
            )


@RESPONSE_SETS.register("reward-bench-2")
def load_reward_bench_2(cfg: ResponseDataConfig) -> Iterator[ResponseItem]:
    """allenai/reward-bench-2 from the hub: chosen (1, or several in Ties) + rejected.

    Rows are read one by one; nothing is mapped or cached with a random draw inside.
    """
    datasets = import_optional(
        "datasets", extra="hub", purpose="reward-bench-2 (read from the hub; needs network)"
    )
    ds = datasets.load_dataset("allenai/reward-bench-2", split=cfg.split, revision=cfg.revision)
    fix = "pin data.revision to a release of allenai/reward-bench-2, or report the row"
    for idx, row in enumerate(ds):
        site = Site(f"allenai/reward-bench-2 ({cfg.split})", fix, item=idx)
        yield _chosen_rejected(site, f"rb2-{site.ident(row, 'id')}", row, "reward-bench-2")


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
    if not out:
        why = f": all {dropped} have not exactly one correct response" if dropped else ""
        raise ConfigError(
            f"{cfg.dataset} ({_root(cfg)}): no items to judge{why}. Fix: check data.path and "
            "the labels (the judge needs items with exactly one true label)"
        )
    logger.info(
        "%s: %d items%s",
        cfg.dataset,
        len(out),
        f" ({dropped} without exactly one correct response dropped)" if dropped else "",
    )
    return out
