"""Training configs: one YAML per student, ``configs/self-distill/<variant>.yaml``, loaded strictly.

Loaded by the one config loader (:mod:`presentation_dependence.config.loader`): unknown keys
are errors with a did-you-mean, and the environment (``PRESDEP_TRAINING__BLOCK__KEY=value``)
then ``--override block.key=value`` apply on top (values parsed as YAML).
``docs/TRAINING-RUNS.md`` documents every block; :data:`VARIANTS` is the table of the four variants.

A variant fixes the *shape* of the training signal and the config must agree with it, so a
config cannot carry one name and train another thing:

=================  =====================  =======  =======================================
variant            labels (T)             views    loss
=================  =====================  =======  =======================================
single_order       one teacher order, 1   1        squared error to the silver scores
order_averaged     mean of T >= 2 orders  1        squared error
perm_aug           one teacher order, 1   >= 2     squared error on every view
oc_sft             one teacher order, 1   >= 2     squared error + λ · consistency (λ > 0)
debias_first       one teacher order, 1   >= 2     inverse-propensity weighted fit; views
                                                   balanced over slot regions
=================  =====================  =======  =======================================

"Squared error" is the ``loss.fit`` term: ``mse`` (E[g] vs label) or ``ce`` (P(g) vs the
label's two-point grade distribution); ``loss.rank_weight`` adds a ListNet term
(training/loss.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from presentation_dependence.config.loader import read_yaml_mapping
from presentation_dependence.data import check_loader
from presentation_dependence.data.config import DataConfig
from presentation_dependence.errors import ConfigError, RegistryError
from presentation_dependence.fields import opt, opt_factory
from presentation_dependence.rerankers import RERANKERS, RerankerConfig
from presentation_dependence.rerankers.base import reranker_block
from presentation_dependence.rerankers.grade import GradeReranker, GradeRerankerOptions
from presentation_dependence.training.calibration import CalibrationConfig
from presentation_dependence.training.config_blocks import (
    EarlyStoppingOptions,
    LossOptions,
    PropensityOptions,
    SelectionOptions,
    SplitsConfig,
    positive,
)
from presentation_dependence.training.run_config import (
    RunFolderConfig,
    build_run_config,
    load_run_config,
)

__all__ = [
    "VARIANTS",
    "EarlyStoppingOptions",
    "LoraOptions",
    "LossOptions",
    "OptimOptions",
    "PropensityOptions",
    "SelectionOptions",
    "SilverConfig",
    "SplitsConfig",
    "TrainingConfig",
    "load_training_config",
]

Variant = Literal["single_order", "order_averaged", "perm_aug", "oc_sft", "debias_first"]
VARIANTS: dict[str, str] = {
    "single_order": "one teacher order (T=1), 1 view, squared error to silver",
    "order_averaged": "mean over T teacher orders, 1 view, squared error",
    "perm_aug": "one teacher order, 2 shuffled views, squared error on each view",
    "oc_sft": "one teacher order, 2 shuffled views, squared error + λ·mean_d (s_A(d) − s_B(d))²",
    "debias_first": "one teacher order, V views balanced over slot regions, fit weighted by the "
    "inverse slot propensity of the off-the-shelf scorer (DebiasFirst, arXiv 2604.03642)",
}
EMBEDDED = "embedded:smollm2-135m-instruct"


def _default_grade_block() -> dict[str, Any]:
    return {"reranker_class": "GradeReranker", "model_name": EMBEDDED, "max_passage_chars": 300}


@dataclass(frozen=True)
class SilverConfig:
    """Where the silver labels are and how they are made (``scripts/train/make_silver.py``)."""

    path: str = opt("runs/self-distill/silver/silver.jsonl", "the silver JSONL file")
    teacher: dict[str, Any] = opt_factory(
        _default_grade_block, "the teacher: any registered reranker block"
    )
    num_orders: int = opt(10, "T presentations per query scored by the teacher (seeded)")
    seed: int = opt(0, "orders = default_rng([seed, crc32(qid)]) permutations, as BSC draws")
    include_given_order: bool = opt(False, "make the first teacher order the given order")
    data: list[DataConfig] = opt_factory(list, "the training queries: a list of data blocks")
    calibration: CalibrationConfig = opt_factory(
        CalibrationConfig,
        "the teacher-to-grade map of the labels (training/calibration.py): identity "
        "for a teacher on the 0..3 scale, cdf for a similarity teacher (E5, MiniLM)",
    )
    scores_archive: str | None = opt(
        None,
        "the teacher's scores without texts (training/silver_scores.py): read where it exists "
        "(a matching query skips the teacher), written once the silver file is complete; commit it",
    )

    def __post_init__(self) -> None:
        positive("silver.num_orders", self.num_orders)
        positive("silver.seed", self.seed, minimum=0)
        object.__setattr__(self, "teacher", reranker_block(self.teacher, "silver.teacher"))


@dataclass(frozen=True)
class OptimOptions:
    """The ``train`` block: optimisation."""

    learning_rate: float = opt(2e-4, "AdamW learning rate of the LoRA parameters")
    epochs: int = opt(1, "passes over the training queries (fresh shuffled views each)")
    max_steps: int | None = opt(None, "stop after this many optimizer steps (overrides epochs)")
    batch_size: int = opt(1, "queries per device per step (each with its views)")
    grad_accum: int = opt(1, "gradient accumulation steps")
    warmup_steps: int = opt(0, "linear warmup steps")
    lr_scheduler: str = opt("linear", "transformers scheduler name: linear, constant, cosine")
    weight_decay: float = opt(0.0, "AdamW weight decay")
    max_grad_norm: float = opt(1.0, "gradient clipping")
    optim: str = opt("adamw_torch", "transformers optimizer name")
    logging_steps: int = opt(1, "log the loss and its parts every this many steps")
    save_steps: int = opt(
        50, "write a resumable checkpoint to <output_dir>/checkpoints/ every this many steps"
    )
    save_total_limit: int = opt(2, "keep this many complete checkpoints (the newest)")
    keep_snapshots: bool = opt(
        False,
        "also copy the adapter of every checkpoint to <output_dir>/snapshots/step-<N>/ and keep "
        "them after training (learning curves: studies/curve.py)",
    )
    gradient_checkpointing: bool | None = opt(
        None, "null = on for GPU, off on CPU (there it costs ~35% time for memory not needed)"
    )
    num_threads: int | None = opt(None, "torch.set_num_threads; null = leave")

    def __post_init__(self) -> None:
        if not self.learning_rate > 0:
            raise ConfigError(f"train.learning_rate must be > 0, got {self.learning_rate}")
        for name in (
            "epochs",
            "batch_size",
            "grad_accum",
            "logging_steps",
            "save_steps",
            "save_total_limit",
        ):
            positive(f"train.{name}", getattr(self, name))
        positive("train.max_steps", self.max_steps, allow_none=True)
        positive("train.num_threads", self.num_threads, allow_none=True)
        positive("train.warmup_steps", self.warmup_steps, minimum=0)


@dataclass(frozen=True)
class LoraOptions:
    """The ``lora`` block (peft ``LoraConfig``)."""

    r: int = opt(8, "LoRA rank")
    alpha: int = opt(16, "LoRA alpha (scaling alpha / r)")
    dropout: float = opt(
        0.0, "dropout on the LoRA branch while training (0: the consistency term sees order only)"
    )
    target_modules: list[str] = opt_factory(
        lambda: ["q_proj", "k_proj", "v_proj", "o_proj"], "module names that get an adapter"
    )

    def __post_init__(self) -> None:
        positive("lora.r", self.r)
        positive("lora.alpha", self.alpha)
        if not 0 <= self.dropout < 1:
            raise ConfigError(f"lora.dropout must be in [0, 1), got {self.dropout}")
        if not self.target_modules:
            raise ConfigError("lora.target_modules must name at least one module")


@dataclass(frozen=True)
class TrainingConfig(RunFolderConfig):
    """One student: variant, labels, views, loss weight, optimisation, LoRA, splits."""

    runs_dir = "runs/self-distill"
    default_id = "student"

    id: str = opt("", "the config file's stem (set automatically)")
    description: str = opt("", "one line")
    variant: Variant = opt(
        "oc_sft", "single_order | order_averaged | perm_aug | oc_sft | debias_first"
    )
    seed: int = opt(0, "seed of the views, the LoRA init and the data order")
    output_dir: str = opt("", "checkpoint folder; empty = runs/self-distill/<id>")
    student: dict[str, Any] = opt_factory(
        _default_grade_block,
        "the reranker block the student is trained as and served as (a GradeReranker family "
        "class); its dtype is the training dtype (auto: bfloat16, on GPU and CPU)",
    )
    silver: SilverConfig = opt_factory(SilverConfig, "the silver labels")
    teacher_orders: int = opt(1, "T: labels = mean of the silver's first T teacher orders")
    views: int = opt(1, "presentations of each query per step")
    view_orders: Literal["shuffle", "teacher", "balanced"] = opt(
        "shuffle",
        "shuffle: seeded random views per epoch; teacher: view 1 = the first "
        "teacher order; balanced: V cyclic shifts (by n/V) of one seeded permutation, "
        "so each candidate visits V evenly spaced slot regions",
    )
    lambda_: float = opt(0.0, "λ: weight of the consistency term (oc_sft only, > 0)")
    train: OptimOptions = opt_factory(OptimOptions, "optimisation")
    loss: LossOptions = opt_factory(LossOptions, "the loss terms")
    finetune: Literal["lora", "full"] = opt(
        "lora",
        "lora: train a LoRA adapter (the lora block); full: train every weight of the base "
        "model (saved as a model folder; keep the student dtype float32 for AdamW)",
    )
    lora: LoraOptions = opt_factory(LoraOptions, "LoRA")
    propensity: PropensityOptions = opt_factory(
        PropensityOptions, "slot propensities (debias_first only)"
    )
    splits: SplitsConfig = opt_factory(SplitsConfig, "test and held-out queries")
    selection: SelectionOptions = opt_factory(SelectionOptions, "λ selection")
    early_stopping: EarlyStoppingOptions = opt_factory(
        EarlyStoppingOptions, "stop on the held-out curve (off unless patience is set)"
    )

    def __post_init__(self) -> None:
        positive("seed", self.seed, minimum=0)
        positive("teacher_orders", self.teacher_orders)
        positive("views", self.views)
        if self.lambda_ < 0:
            raise ConfigError(f"lambda_ must be >= 0, got {self.lambda_}")
        student = reranker_block(self.student, "student")
        cls = RerankerConfig.from_raw(student)
        if not isinstance(cls.options, GradeRerankerOptions) or cls.options.adapter_folder():
            raise ConfigError(
                f"student: a GradeReranker-family block without adapter_path or adapter is needed, got "
                f"{student['reranker_class']} (the student is trained on the expected-grade readout)"
            )
        object.__setattr__(self, "student", student)
        if self.teacher_orders > self.silver.num_orders:
            raise ConfigError(
                f"teacher_orders (T={self.teacher_orders}) > silver.num_orders "
                f"({self.silver.num_orders}): the silver file has only that many orders"
            )
        self._check_variant()
        self._check_early_stopping()

    def _check_early_stopping(self) -> None:
        if not self.early_stopping.enabled:
            return
        problems = []
        if not self.train.keep_snapshots:
            problems.append(
                "train.keep_snapshots is false, and each checkpoint's adapter is measured and "
                "the best one kept. Fix: set train.keep_snapshots: true"
            )
        if self.finetune != "lora":
            problems.append(
                "finetune is full, and the best checkpoint is restored as LoRA weights. "
                "Fix: finetune: lora, or unset early_stopping.patience"
            )
        if not self.splits.heldout:
            problems.append(
                "splits.heldout is empty. Fix: name the held-out queries the curve is measured on"
            )
        if problems:
            raise ConfigError(
                "early_stopping.patience is set, but " + "; ".join(problems), key="early_stopping"
            )

    def _check_variant(self) -> None:
        v, t, views, lam = self.variant, self.teacher_orders, self.views, self.lambda_
        problems = []
        if v in ("single_order", "perm_aug", "oc_sft", "debias_first") and t != 1:
            problems.append(f"teacher_orders must be 1, got {t}")
        if v == "order_averaged" and t < 2:
            problems.append(f"teacher_orders must be >= 2, got {t}")
        if v in ("single_order", "order_averaged") and views != 1:
            problems.append(f"views must be 1, got {views}")
        if v in ("perm_aug", "oc_sft", "debias_first") and views < 2:
            problems.append(f"views must be >= 2, got {views}")
        if v == "oc_sft" and lam <= 0:
            problems.append(f"lambda_ must be > 0, got {lam}")
        if v != "oc_sft" and lam != 0:
            problems.append(f"lambda_ must be 0 (only oc_sft has a consistency term), got {lam}")
        if v in ("perm_aug", "oc_sft") and self.view_orders != "shuffle":
            problems.append("view_orders must be 'shuffle'")
        if v == "debias_first" and self.view_orders != "balanced":
            problems.append("view_orders must be 'balanced'")
        if v == "debias_first" and not self.propensity.psi_dir:
            problems.append("propensity.psi_dir must name a PSI run folder")
        if v != "debias_first" and self.propensity.psi_dir:
            problems.append("propensity.psi_dir is for debias_first only")
        if problems:
            raise ConfigError(
                f"variant {v!r} ({VARIANTS[v]}): " + "; ".join(problems) + ". Fix the config or "
                "pick the variant that matches it"
            )

    @property
    def student_options(self) -> GradeRerankerOptions:
        opts = RerankerConfig.from_raw(self.student).options
        assert isinstance(opts, GradeRerankerOptions)
        return opts

    @property
    def student_class(self) -> type[GradeReranker]:
        cls = RERANKERS.get(self.student["reranker_class"])
        assert isinstance(cls, type) and issubclass(cls, GradeReranker)
        return cls


def training_config_from_raw(raw: Mapping[str, Any], config_id: str) -> TrainingConfig:
    cfg = build_run_config(TrainingConfig, raw, config_id)
    for key, blocks in (
        ("silver.data", cfg.silver.data),
        ("splits.test", cfg.splits.test),
        ("splits.heldout", cfg.splits.heldout),
    ):
        for i, block in enumerate(blocks):
            check_loader(block, f"{key}[{i}]")
    return cfg


def load_training_config(path: str | Path, overrides: Sequence[str] = ()) -> TrainingConfig:
    """Load ``path`` (safe YAML), apply environment then ``--override`` assignments, validate."""
    return load_run_config(
        path,
        training_config_from_raw,
        family="training",
        overrides=overrides,
        hint=" (see configs/self-distill/)",
    )


def read_folder_config(folder: str | Path) -> TrainingConfig:
    """The training config a training ``output_dir`` froze (its ``resolved_config.yaml``),
    validated as when it ran; the id is the one it ran under, not the file's name."""
    path = Path(folder) / "resolved_config.yaml"
    if not path.is_file():
        raise ConfigError(f"{folder} is not a training folder: it has no resolved_config.yaml")
    raw = read_yaml_mapping(path)
    try:
        return training_config_from_raw(raw, str(raw.get("id") or Path(folder).name))
    except (ConfigError, RegistryError) as e:
        raise ConfigError(f"{path}: {e}", key=e.key) from None
