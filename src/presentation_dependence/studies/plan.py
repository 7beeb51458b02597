"""The CPU-scale study's command plan (``scripts/train/run_cpu_study.py``); its table is
:mod:`~presentation_dependence.studies.table`.

Train on non-DL19 queries (SciFact BM25 top-20, HotpotQA paragraphs, NovelEval), select λ on
held-out queries of the same collections, and evaluate on DL19 top-20 with M = 10 shuffles:
the off-the-shelf readout, batched self-consistency (BSC, K = 10) and the four students. Each
step is an ordinary command of the repository; every one of them resumes or is skipped when
its output exists, so the plan can be rerun after an interruption.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from presentation_dependence.config.loader import load_config
from presentation_dependence.errors import ConfigError
from presentation_dependence.fields import build_dataclass, opt, req

__all__ = ["CHOSEN", "STUDENTS", "STUDENT_NAMES", "Step", "load_plan", "study_plan"]

# (scorer name, training config stem) of the four students.
STUDENTS = (
    ("single-order", "single-order"),
    ("order-averaged", "order-averaged"),
    ("perm-aug", "perm-aug"),
    ("oc-sft", "oc-sft"),
)
# Every trained scorer's run-folder name (the content study adds DebiasFirst and gold OC-SFT).
STUDENT_NAMES = (*(name for name, _ in STUDENTS), "debias-first", "oc-sft-gold")
CHOSEN = "<chosen adapter of {selection}>"


@dataclass(frozen=True)
class Step:
    """One command; ``done`` names a file whose existence means the step can be skipped;
    ``blocked`` why it cannot run (it is skipped with that reason); ``wait_for`` a file that
    another lane writes (the step waits until it exists, e.g. the silver labels)."""

    name: str = req("the step's name (unique in the plan; --from/--until take it)")
    argv: list[str] = req("the command; {python} is this interpreter")
    done: str | None = opt(None, "a file whose existence means the step is done (skipped)")
    needs_chosen_adapter: bool = opt(
        False, "the step needs the adapter λ selection chose (skipped until it exists)"
    )
    lane: str = opt("main", "the lane that runs it (--lane); lanes run as separate processes")
    blocked: str | None = opt(None, "why the step cannot run here (skipped with this reason)")
    wait_for: str | None = opt(None, "a file another lane writes; the step waits until it exists")


@dataclass(frozen=True)
class Plan:
    """A plan file: ``steps: [{name, argv: [...], done, lane}]``."""

    steps: list[Step] = req("the steps, in order (each lane runs its own in this order)")


def load_plan(path: str | Path, *, python: str = "python") -> list[Step]:
    """A study plan from YAML: ``steps: [{name, argv: [...], done, lane}]``, in order.

    ``{python}`` in an argv item is replaced by ``python``; ``done`` names the file whose
    existence marks the step finished (steps without one always run: they resume or are
    no-ops themselves); ``lane`` groups steps that one process runs in order, so two lanes
    can share the machine (``run_cpu_study.py --plan FILE --lane NAME``); ``wait_for`` names
    a file of another lane that the step needs (it waits until the file exists).
    """

    def build(raw: dict[str, Any], stem: str) -> list[Step]:
        steps = build_dataclass(Plan, raw).steps
        if not steps:
            raise ConfigError("expected 'steps:' with a list of steps", key="steps")
        names = [s.name for s in steps]
        for i, s in enumerate(steps):
            if not s.argv:
                raise ConfigError(f"step {s.name!r} needs a non-empty argv", key=f"steps[{i}]")
            if s.name in names[:i]:
                raise ConfigError(f"step name {s.name!r} repeats", key=f"steps[{i}]")
        return [replace(s, argv=[a.replace("{python}", python) for a in s.argv]) for s in steps]

    return load_config(path, build, family="plan")


def study_plan(
    *,
    python: str = "python",
    root: str = "runs/self-distill/study",
    configs: str = "configs/self-distill",
    dl19_config: str = "configs/experiments/psi-dl19-smollm2.yaml",
    bsc_config: str = "configs/experiments/psi-dl19-smollm2-bsc.yaml",
    data_dir: str = "data/study",
    launcher: Sequence[str] = (),
    eval_overrides: Sequence[str] = (),
) -> list[Step]:
    """The study's commands in order. ``launcher`` prefixes training (e.g. accelerate launch)."""
    selection = f"{root}/lambda"
    overrides = [a for o in eval_overrides for a in ("--override", o)]
    scorers = _scorers(dl19_config, bsc_config, selection)
    return [
        *_training_steps(python, configs, data_dir, launcher, selection),
        *_dl19_steps(python, root, scorers, overrides),
        Step(
            "table",
            [python, "scripts/train/study_table.py", f"{root}/dl19", "--out", f"{root}/table.md"],
        ),
    ]


def _training_steps(
    python: str, configs: str, data_dir: str, launcher: Sequence[str], selection: str
) -> list[Step]:
    """The data, the silver labels, λ selection and the three students trained directly."""
    trainer = [*(launcher or [python])]
    steps = [
        Step(
            "data",
            [python, "scripts/train/prepare_study_data.py", "--out", data_dir],
            f"{data_dir}/noveleval-heldout.jsonl",
        ),
        Step("silver", [python, "scripts/train/make_silver.py", f"{configs}/oc-sft.yaml"]),
        Step(
            "lambda",
            [
                *trainer,
                "scripts/train/select_lambda.py",
                f"{configs}/oc-sft.yaml",
                "--out",
                selection,
            ],
            f"{selection}/lambda_selection.json",
        ),
    ]
    for name, stem in STUDENTS[:3]:
        steps.append(
            Step(
                f"train {name}",
                [*trainer, "scripts/train/train_student.py", f"{configs}/{stem}.yaml"],
                f"runs/self-distill/{stem}/adapter/adapter_model.safetensors",
            )
        )
    return steps


def _scorers(
    dl19_config: str, bsc_config: str, selection: str
) -> list[tuple[str, str, list[str], bool]]:
    """``(name, config, extra argv, needs the chosen adapter)`` of every DL19 scorer: the
    off-the-shelf readout, BSC and the four students (OC-SFT with λ selection's adapter)."""
    scorers: list[tuple[str, str, list[str], bool]] = [
        ("off-the-shelf", dl19_config, [], False),
        ("bsc", bsc_config, [], False),
    ]
    for name, stem in STUDENTS:
        adapter = CHOSEN.format(selection=selection) if name == "oc-sft" else None
        adapter = adapter or f"runs/self-distill/{stem}/adapter"
        extra = ["--override", f"reranker.adapter_path={adapter}"]
        scorers.append((name, dl19_config, extra, name == "oc-sft"))
    return scorers


def _dl19_steps(
    python: str,
    root: str,
    scorers: Sequence[tuple[str, str, list[str], bool]],
    overrides: Sequence[str],
) -> list[Step]:
    """Each scorer's DL19 run (evaluated) and its PSI step."""
    steps = []
    for name, config, extra, chosen in scorers:
        run_dir = f"{root}/dl19/{name}"
        common = [config, *extra, *overrides, "--run-dir", run_dir]
        steps.append(
            Step(
                f"run {name}",
                [python, "scripts/run_experiment.py", *common, "--eval"],
                f"{run_dir}/metrics.json",
                chosen,
            )
        )
        steps.append(
            Step(
                f"psi {name}",
                [python, "scripts/run_psi.py", *common],
                f"{run_dir}/psi/psi_metrics.json",
                chosen,
            )
        )
    return steps
