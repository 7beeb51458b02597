"""Train/held-out/test splits of the judge sets, by item, with a recorded seed (issue 37).

A *splits spec* (``configs/judge/train/splits.yaml``, :class:`SplitsSpec`) names, per set, the
judge study config whose items are the **test** set (the items ``presdep judge`` judges with it,
so the off-the-shelf rows of the judge study are the baseline) and the data block of the
**pool** the training items come from. :func:`build_splits` loads both and writes the splits
file (``presdep-judge-splits/1``, JSON): the seed, the held-out fraction, the sha256 of every
source file, and per set the item ids of ``test``, ``train`` and ``heldout``.

* A pool item is dropped when its *source item* (the id before ``~``) is a test item of any
  set, or its prompt, lower-cased with whitespace collapsed, is a test prompt (``dropped``).
* ``shape: pairs`` makes one item of two responses from each pool item with at least one
  correct and one incorrect response: a seeded draw of one of each, id
  ``<source id>~<i>-<j>`` (responses i and j of the source, correct first).
* The held-out slice (the gate's threshold and checkpoint selection) is drawn per *source*
  item, ``default_rng([seed, crc32("judge-heldout"), crc32(source id)])``, so a problem that
  feeds two sets (GSM8K four-way and pairs) is held out in both or in neither.
* A set with ``train: false`` (LLMBar: a transfer check) records its test ids only.

:func:`load_split_items` reads the items of a split back (the source files checked against the
recorded sha256 first) and :func:`check_splits` proves that no source item or prompt crosses
from train or held-out into test, or from train into held-out.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from presentation_dependence.config.loader import load_config
from presentation_dependence.errors import ConfigError
from presentation_dependence.fields import build_dataclass, opt, opt_factory, req
from presentation_dependence.io.atomic import atomic_write_text
from presentation_dependence.judge.config import load_judge_config
from presentation_dependence.judge.items.loaders import (
    ResponseDataConfig,
    default_shared_data,
    load_response_set,
)
from presentation_dependence.judge.items.records import ResponseItem
from presentation_dependence.seeding import rng_from
from presentation_dependence.training.splits import SplitOverlapError, normalise_query

__all__ = [
    "SPLITS_FORMAT",
    "SplitSet",
    "SplitsSpec",
    "build_splits",
    "check_splits",
    "export_split",
    "load_split_items",
    "load_splits_spec",
    "read_splits",
    "source_id",
]

SPLITS_FORMAT = "presdep-judge-splits/1"
SPLITS = ("train", "heldout", "test")


@dataclass(frozen=True)
class SplitSet:
    """One set of the splits: its test config, its training pool and the pool's shape."""

    name: str = req("the set's name in the splits file")
    test: str = req("the judge config whose items are the test set (configs/judge/study/...)")
    pool: ResponseDataConfig | None = opt(None, "the data block of the training pool")
    shape: Literal["as_is", "pairs"] = opt(
        "as_is", "as_is: the pool's items; pairs: one seeded (correct, incorrect) pair each"
    )
    train: bool = opt(True, "false: a test-only set (never trained on)")

    def __post_init__(self) -> None:
        if self.train and self.pool is None:
            raise ConfigError(f"set {self.name!r}: a trained set needs a pool data block")


@dataclass(frozen=True)
class SplitsSpec:
    """The splits spec: the seed, the held-out fraction, where the splits file goes, the sets."""

    out: str = req("where the splits file is written")
    seed: int = opt(0, "seed of the held-out draw and of the pairs")
    heldout_fraction: float = opt(0.1, "share of the training pool's source items held out")
    sets: list[SplitSet] = opt_factory(list, "the sets")

    def __post_init__(self) -> None:
        if not 0 <= self.heldout_fraction < 1:
            raise ConfigError(f"heldout_fraction must be in [0, 1), got {self.heldout_fraction}")
        names = [s.name for s in self.sets]
        if not names or len(set(names)) != len(names):
            raise ConfigError(f"sets must be a non-empty list of distinct names, got {names}")


def load_splits_spec(path: str | Path) -> SplitsSpec:
    return load_config(
        path, lambda raw, _stem: build_dataclass(SplitsSpec, raw), family="judge-splits"
    )


def source_id(item_id: str) -> str:
    """The id of the item a training item was made from (``a~0-2`` -> ``a``)."""
    return item_id.split("~", 1)[0]


def _test_items(path: str) -> list[ResponseItem]:
    """The items ``presdep judge`` judges with the config at ``path`` (one correct each)."""
    cfg = load_judge_config(path)
    return load_response_set(replace(cfg.data, require_one_correct=True))


def _data_root(cfg: ResponseDataConfig) -> Path:
    return Path(cfg.path).expanduser() if cfg.path else default_shared_data() / cfg.dataset


SHARED = "$SHARED_DATA/"  # a source under the shared data folder (default_shared_data())


def _source_name(f: Path) -> str:
    """``$SHARED_DATA/<set>/<file>`` under the shared data folder (so the file is portable
    between clones), else the path as given."""
    try:
        return SHARED + f.resolve().relative_to(default_shared_data().resolve()).as_posix()
    except ValueError:
        return f.as_posix()


def _source_path(name: str) -> Path:
    return default_shared_data() / name[len(SHARED) :] if name.startswith(SHARED) else Path(name)


def _sources(blocks: Iterable[ResponseDataConfig]) -> dict[str, str]:
    """sha256 of every data file under the blocks' roots, keyed by :func:`_source_name`."""
    out: dict[str, str] = {}
    for block in blocks:
        root = _data_root(block)
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        for f in files:
            if f.suffix in (".json", ".jsonl", ".gz"):
                out[_source_name(f)] = hashlib.sha256(f.read_bytes()).hexdigest()
    return dict(sorted(out.items()))


def _pair(item: ResponseItem, seed: int) -> ResponseItem | None:
    """One seeded (correct, incorrect) pair of ``item``; None without one of each."""
    good = [i for i, ok in enumerate(item.labels) if ok]
    bad = [i for i, ok in enumerate(item.labels) if not ok]
    if not good or not bad:
        return None
    rng = rng_from(seed, "judge-pair", item.item_id)
    i, j = good[int(rng.integers(len(good)))], bad[int(rng.integers(len(bad)))]
    return _derived(item, (i, j))


def _derived(item: ResponseItem, keep: tuple[int, ...]) -> ResponseItem:
    return replace(
        item,
        item_id=f"{item.item_id}~{'-'.join(map(str, keep))}",
        responses=tuple(item.responses[k] for k in keep),
        labels=tuple(item.labels[k] for k in keep),
    )


def _pool(s: SplitSet, seed: int) -> list[ResponseItem]:
    assert s.pool is not None
    items = load_response_set(s.pool)
    if s.shape == "pairs":
        return [p for p in (_pair(it, seed) for it in items) if p is not None]
    return [it for it in items if it.num_correct == 1]


def is_heldout(seed: int, fraction: float, item_id: str) -> bool:
    return bool(rng_from(seed, "judge-heldout", source_id(item_id)).random() < fraction)


def build_splits(spec: SplitsSpec, *, spec_path: str = "") -> dict[str, Any]:
    """The splits of ``spec`` (module docstring), written to ``spec.out``; returned."""
    tests = {s.name: _test_items(s.test) for s in spec.sets}
    test_ids = {it.item_id for items in tests.values() for it in items}
    test_prompts = {normalise_query(it.prompt) for items in tests.values() for it in items}
    blocks: list[ResponseDataConfig] = [load_judge_config(s.test).data for s in spec.sets]
    sets: dict[str, Any] = {}
    for s in spec.sets:
        entry: dict[str, Any] = {
            "test_config": s.test,
            "shape": s.shape,
            "pool": None if s.pool is None else _plain(s.pool),
            "test": [it.item_id for it in tests[s.name]],
        }
        if s.train:
            assert s.pool is not None
            blocks.append(s.pool)
            kept, dropped = [], []
            for it in _pool(s, spec.seed):
                crosses = source_id(it.item_id) in test_ids
                if crosses or normalise_query(it.prompt) in test_prompts:
                    dropped.append(it.item_id)
                else:
                    kept.append(it.item_id)
            held = [i for i in kept if is_heldout(spec.seed, spec.heldout_fraction, i)]
            entry.update(
                train=[i for i in kept if i not in set(held)], heldout=held, dropped=dropped
            )
        sets[s.name] = entry
    splits = {
        "format": SPLITS_FORMAT,
        "spec": spec_path,
        "seed": spec.seed,
        "heldout_fraction": spec.heldout_fraction,
        "sources": _sources(blocks),
        "sets": sets,
    }
    check_splits(splits)
    atomic_write_text(Path(spec.out), json.dumps(splits, indent=1) + "\n")
    return splits


def _plain(block: ResponseDataConfig) -> dict[str, Any]:
    defaults = ResponseDataConfig(dataset=block.dataset)
    return {k: v for k, v in vars(block).items() if v != getattr(defaults, k) or k == "dataset"}


def read_splits(path: str | Path) -> dict[str, Any]:
    """The splits file at ``path``, its format checked."""
    try:
        splits = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ConfigError(
            f"{path}: not a readable splits file ({e}). Fix: presdep judge-splits SPEC"
        ) from None
    if not isinstance(splits, dict) or splits.get("format") != SPLITS_FORMAT:
        raise ConfigError(f"{path}: not a {SPLITS_FORMAT} file. Fix: presdep judge-splits SPEC")
    return splits


def check_splits(splits: dict[str, Any]) -> None:
    """Refuse splits where a source item crosses train/held-out into test or train into
    held-out (ids across every set; SplitOverlapError naming them)."""
    ids = {
        name: {k: set(map(source_id, s.get(k, []))) for k in SPLITS}
        for name, s in splits["sets"].items()
    }
    test = set().union(*(v["test"] for v in ids.values()))
    train = set().union(*(v["train"] for v in ids.values()))
    heldout = set().union(*(v["heldout"] for v in ids.values()))
    for a, b, shared in (
        ("train", "test", train & test),
        ("held-out", "test", heldout & test),
        ("train", "held-out", train & heldout),
    ):
        if shared:
            raise SplitOverlapError(
                f"{len(shared)} source items are in both the {a} and the {b} split, e.g. "
                f"{sorted(shared)[:5]}. Fix: rebuild the splits (presdep judge-splits SPEC)"
            )


def _check_sources(splits: dict[str, Any], path: str | Path) -> None:
    recorded: dict[str, str] = splits["sources"]
    for name, digest in recorded.items():
        f = _source_path(name)
        actual = hashlib.sha256(f.read_bytes()).hexdigest() if f.is_file() else "missing"
        if actual != digest:
            raise ConfigError(
                f"{path}: source {name} is {actual[:16]}, the splits recorded {digest[:16]}: the "
                "data changed since the splits were made. Fix: restore the data, or rebuild the "
                "splits (presdep judge-splits SPEC) and retrain"
            )


def load_split_items(
    path: str | Path, split: str, sets: Sequence[str] = (), *, check_sources: bool = True
) -> list[ResponseItem]:
    """The items of ``split`` (train, heldout, test) of ``sets`` (default: every set that has
    the split), in the file's order, rebuilt from their pools (or test configs)."""
    if split not in SPLITS:
        raise ConfigError(f"split must be one of {SPLITS}, got {split!r}")
    splits = read_splits(path)
    if check_sources:
        _check_sources(splits, path)
    check_splits(splits)
    unknown = [s for s in sets if s not in splits["sets"]]
    if unknown:
        raise ConfigError(f"{path}: no set {unknown}; it has {sorted(splits['sets'])}")
    out: list[ResponseItem] = []
    for name, entry in splits["sets"].items():
        if (sets and name not in sets) or not entry.get(split):
            continue
        if split == "test":
            known = {it.item_id: it for it in _test_items(entry["test_config"])}
        else:
            pool = build_dataclass(ResponseDataConfig, entry["pool"])
            items = load_response_set(pool)
            pairs = entry["shape"] == "pairs"
            known = {}
            for it in items:
                made = _pair(it, int(splits["seed"])) if pairs else it
                if made is not None:
                    known[made.item_id] = made
        missing = [i for i in entry[split] if i not in known]
        if missing:
            raise ConfigError(f"{path}: set {name!r} lists items its data lacks: {missing[:5]}")
        out.extend(known[i] for i in entry[split])
    return out


def export_split(path: str | Path, split: str, out_dir: str | Path) -> list[Path]:
    """Write each set's ``split`` items to ``<out_dir>/<set>.jsonl`` in the ``jsonl`` response
    set format (``data: {dataset: jsonl, path: <file>}`` judges them: the held-out slice of the
    gate's threshold and of checkpoint selection). Returns the files written."""
    names = list(read_splits(path)["sets"])
    written = []
    for name in names:
        items = load_split_items(path, split, [name])
        if not items:
            continue
        rows = [
            json.dumps(
                {
                    "id": it.item_id,
                    "prompt": it.prompt,
                    "responses": list(it.responses),
                    "labels": list(it.labels),
                    "source": it.source,
                    "subset": it.subset,
                },
                ensure_ascii=False,
            )
            for it in items
        ]
        target = Path(out_dir) / f"{name}.jsonl"
        atomic_write_text(target, "\n".join(rows) + "\n")
        written.append(target)
    return written
