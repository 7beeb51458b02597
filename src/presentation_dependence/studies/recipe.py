"""The recipe search (issue 36): training-recipe arms against one reference, on the held-out split.

A search file (``configs/study/recipe-search.yaml``) names a base training config, the probe
settings every arm shares (``probe``: dotted keys, e.g. ``train.max_steps``), the held-out
curve's settings (``curve``), the reference arm, and the arms: each a mapping of dotted keys
applied on top, exactly as ``--override`` would (``loss.rank_weight: 1.0``; a value may be a
whole block). Arm ``a`` trains into ``<output_root>/a/`` (:func:`arm_config`); an arm whose
silver file is missing has it made first (its own teacher or data: resumable per query).

:func:`run_arm` trains an arm (resumable per checkpoint) and measures its learning curve
(cached per point); :func:`recipe_rows` reads finished arm folders, or their archived copies
(the same layout: ``curve/step-*.json``, ``train_log.jsonl``, ``provenance.json``), and
:func:`recipe_markdown` renders the table: per arm at its last point the held-out nDCG@10 in
the given order and over the shuffles, τ-PSI, the paired difference from the reference at the
same step over the same queries (seeded bootstrap), and the cost (training CPU seconds and
prompt tokens, :func:`~presentation_dependence.training.progress.training_cost`).
"""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from presentation_dependence.config.loader import read_yaml_mapping
from presentation_dependence.errors import ConfigError
from presentation_dependence.fields import build_dataclass, opt
from presentation_dependence.io.atomic import atomic_write_bytes
from presentation_dependence.io.markdown import markdown_table
from presentation_dependence.metrics.stats import paired_bootstrap
from presentation_dependence.seeding import rng_from
from presentation_dependence.studies.curve import learning_curve_points
from presentation_dependence.training.config import TrainingConfig, load_training_config
from presentation_dependence.training.progress import TRAIN_LOG, training_cost
from presentation_dependence.training.silver import generate_silver
from presentation_dependence.training.trainer import train_student

__all__ = [
    "CurveSettings",
    "RecipeSearch",
    "archive_arm",
    "arm_config",
    "load_search",
    "recipe_markdown",
]
__all__ += ["recipe_rows", "run_arm", "series_of"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CurveSettings:
    """The ``curve`` block: how each checkpoint is scored on the held-out queries."""

    num_presentations: int = opt(4, "M shuffled presentations per held-out query")
    max_queries: int | None = opt(40, "held-out queries (stratified by source)")
    seed: int = opt(0, "seed of the shuffles and of the paired bootstrap")


@dataclass(frozen=True)
class RecipeSearch:
    """A search file (module docstring)."""

    base: str = opt("", "the training config every arm starts from")
    output_root: str = opt("runs/study/recipe", "arm a trains into <output_root>/a/")
    reference: str = opt("", "the arm the others are compared with, paired per query")
    probe: dict[str, Any] = field(default_factory=dict, metadata={"help": "dotted keys, all arms"})
    curve: CurveSettings = field(default_factory=CurveSettings, metadata={"help": "the curve"})
    arms: dict[str, dict[str, Any]] = field(
        default_factory=dict, metadata={"help": "arm name -> dotted keys on top of the probe"}
    )

    def __post_init__(self) -> None:
        if not self.base:
            raise ConfigError("base: name the training config the arms start from", key="base")
        if not self.arms or self.reference not in self.arms:
            raise ConfigError(
                f"reference: {self.reference!r} must be one of the arms ({', '.join(self.arms)})",
                key="reference",
            )
        for name, keys in self.arms.items():
            if not isinstance(keys, Mapping):
                raise ConfigError(f"arms.{name}: a mapping of dotted keys, got {keys!r}")


def load_search(path: str | Path) -> RecipeSearch:
    """Read and validate a search file (safe YAML; unknown keys are errors)."""
    raw = read_yaml_mapping(Path(path))
    try:
        return build_dataclass(RecipeSearch, raw, "recipe search")
    except ConfigError as e:
        raise ConfigError(f"{path}: {e}", key=e.key) from None


def _assignments(keys: Mapping[str, Any]) -> list[str]:
    """``key=value`` overrides, each value as flow YAML (read back unchanged: JSON would write
    5e-05, which YAML 1.1 reads as a string)."""
    out = []
    for k, v in keys.items():
        text = yaml.safe_dump(v, default_flow_style=True, width=1 << 20).strip()
        out.append(f"{k}={text.removesuffix('...').strip()}")
    return out


def arm_config(search: RecipeSearch, arm: str) -> TrainingConfig:
    """The training config of ``arm``: base, then the probe, then the arm's keys."""
    if arm not in search.arms:
        raise ConfigError(f"arm {arm!r}: not one of {', '.join(search.arms)}")
    keys = {**search.probe, **search.arms[arm], "output_dir": f"{search.output_root}/{arm}"}
    return load_training_config(search.base, _assignments(keys))


def run_arm(search: RecipeSearch, arm: str, argv: Sequence[str] | None = None) -> list[dict]:
    """Make the arm's silver labels if missing, train it, measure its curve; the points."""
    cfg = arm_config(search, arm)
    if not Path(cfg.silver.path).is_file():
        log.info("%s: making the silver labels %s first", arm, cfg.silver.path)
        generate_silver(cfg.silver, argv=argv)
    train_student(cfg, argv=argv)
    c = search.curve
    return learning_curve_points(
        cfg,
        num_presentations=c.num_presentations,
        seed=c.seed,
        max_queries=c.max_queries,
        per_query=True,
        include_base=arm == search.reference,  # the base model measured once, with the reference
    )


ARCHIVED = ("train_log.jsonl", "provenance.json", "resolved_config.yaml", "early_stopping.json")


def archive_arm(search: RecipeSearch, arm: str, to: str | Path) -> Path:
    """Copy what the table reads of a finished arm (its curve points, training log,
    provenance, frozen config, early-stopping record) to ``<to>/<arm>/``, for git; not its
    adapters. Atomic per file; an earlier copy is replaced."""
    src = Path(search.output_root) / arm
    if not (src / "provenance.json").is_file():
        raise ConfigError(f"arm {arm}: {src} holds no finished run to archive")
    dst = Path(to) / arm
    names = [n for n in ARCHIVED if (src / n).is_file()]
    names += [f"curve/{p.name}" for p in sorted((src / "curve").glob("step-*.json"))]
    shutil.rmtree(dst, ignore_errors=True)
    for name in names:
        atomic_write_bytes(dst / name, (src / name).read_bytes())
    return dst


def _points(folder: Path) -> list[dict[str, Any]]:
    """The cached curve points of an arm folder, in step order (zero-padded file names)."""
    files = sorted((folder / "curve").glob("step-*.json"))
    return [json.loads(p.read_text(encoding="utf-8"))["point"] for p in files]


def series_of(search: RecipeSearch, root: str | Path | None = None) -> dict[str, list[dict]]:
    """Each arm's curve points (step order) under ``root`` (default ``output_root``), for the
    arms that have a training log and points there."""
    base = Path(root or search.output_root)
    series = {a: _points(base / a) for a in search.arms if (base / a / TRAIN_LOG).is_file()}
    return {a: pts for a, pts in series.items() if pts}


def recipe_rows(search: RecipeSearch, root: str | Path | None = None) -> list[dict[str, Any]]:
    """One row per arm with a finished curve under ``root`` (default ``output_root``): its
    last point, the reference's point at the same step, and its cost."""
    base = Path(root or search.output_root)
    series = series_of(search, root)
    ref = {p["step"]: p for p in series.get(search.reference, [])}
    rows = []
    for arm, points in series.items():
        last = points[-1]
        rows.append(
            {
                "arm": arm,
                "point": last,
                "reference": ref.get(last["step"]),
                "cost": training_cost(base / arm / TRAIN_LOG),
                "keys": search.arms[arm],
            }
        )
    return rows


def _paired(row: Mapping[str, Any], metric: str, seed: int) -> str:
    ref, last = row["reference"], row["point"]
    if ref is None:
        return "—"
    keys = sorted(set(last["per_query"]) & set(ref["per_query"]))
    a = [last["per_query"][q][metric] for q in keys]
    b = [ref["per_query"][q][metric] for q in keys]
    r = paired_bootstrap(a, b, rng=rng_from(seed, row["arm"], metric))
    return f"{r['mean_diff']:+.3f} [{r['ci_low']:+.3f}, {r['ci_high']:+.3f}]"


def recipe_markdown(search: RecipeSearch, rows: Sequence[Mapping[str, Any]]) -> str:
    """The recipe-search table (module docstring) with a line on how it was measured."""
    head = ["arm", "keys", "step", "nDCG@10 given", "nDCG@10 over shuffles", "τ-PSI"]
    head += ["ΔnDCG@10 over shuffles [95% CI]", "Δτ-PSI [95% CI]", "CPU s", "tokens (M)"]
    body = []
    for row in rows:
        p, cost = row["point"], row["cost"]
        same = row["arm"] == search.reference
        keys = ", ".join(f"`{k}: {v}`" for k, v in row["keys"].items()) or "(the reference)"
        body.append(
            [
                row["arm"],
                keys,
                p["step"],
                f"{p['ndcg_given']:.3f}",
                f"{p['ndcg_mean']:.3f}",
                f"{p['tau_psi']:.3f}",
                "—" if same else _paired(row, "ndcg_mean", search.curve.seed),
                "—" if same else _paired(row, "tau_psi", search.curve.seed),
                "—" if cost["cpu_s"] is None else f"{cost['cpu_s']:,.0f}",
                "—" if cost["tokens"] is None else f"{cost['tokens'] / 1e6:.2f}",
            ]
        )
    c = search.curve
    lines = [
        f"Held-out queries: up to {c.max_queries}, M = {c.num_presentations} shuffles (seed "
        f"{c.seed}). Δ: arm − `{search.reference}` at the same step, paired over the held-out "
        "queries (seeded bootstrap, 95% CI; — where the reference has no point at that step). "
        "CPU s: the training steps' CPU seconds (all threads; held-out points and checkpoint "
        "saving excluded); tokens: prompt tokens trained on.",
        "",
        *markdown_table(head, body),
    ]
    return "\n".join(lines) + "\n"
