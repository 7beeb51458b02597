"""LoRA adapters on the readout: find an adapter folder, fingerprint it, attach it to a backend.

A trained student (``docs/TRAINING.md``) is a base model plus a peft LoRA adapter folder
(``adapter_config.json`` + ``adapter_model.safetensors``). A reranker config names it with
``adapter_path``; the reranker loads its own copy of the base model (never the shared, cached
one: attaching an adapter changes the model) and wraps it with ``peft.PeftModel``.

The adapter is **not merged**: the serving forward pass is the training forward pass (base
layer plus the LoRA branch, in the same dtype), so a reloaded student scores exactly like the
model that was saved. Merging would fold the LoRA product into bfloat16 base weights and round
it; the unmerged branch costs two rank-r matmuls per adapted projection, a few percent of a
forward pass at r = 8.

The fingerprint is the sha256 over the adapter's config and weights files (name, NUL, bytes for
each, in name order), so it changes whenever the weights or the scaling (alpha, r) do.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from presentation_dependence.errors import ConfigError
from presentation_dependence.optional import import_optional

if TYPE_CHECKING:
    from presentation_dependence.readout.backend import TransformersBackend

__all__ = ["ADAPTER_FILES", "adapter_sha256", "attach_adapter", "files_sha256", "resolve_adapter"]

logger = logging.getLogger(__name__)

ADAPTER_CONFIG = "adapter_config.json"
ADAPTER_FILES = (ADAPTER_CONFIG, "adapter_model.safetensors")


def resolve_adapter(path: str | Path) -> Path:
    """The adapter folder ``path`` names, checked to hold a peft adapter."""
    folder = Path(path).expanduser()
    if (folder / ADAPTER_CONFIG).is_file() and (folder / ADAPTER_FILES[1]).is_file():
        return folder
    hint = ""
    if (folder / "adapter" / ADAPTER_CONFIG).is_file():
        hint = f" Did you mean {folder / 'adapter'}? (a training output folder keeps it there)"
    raise ConfigError(
        f"adapter_path {str(path)!r} is not a LoRA adapter folder: it needs "
        f"{' and '.join(ADAPTER_FILES)}.{hint} Fix: point adapter_path at the 'adapter' folder "
        "a training run wrote (docs/TRAINING.md)"
    )


@functools.lru_cache(maxsize=32)
def _sha256(folder: Path, names: tuple[str, ...], stamp: tuple[tuple[int, int], ...]) -> str:
    h = hashlib.sha256()
    for name in sorted(names):
        h.update(name.encode("utf-8") + b"\0")
        with (folder / name).open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()


def files_sha256(folder: str | Path, names: Sequence[str]) -> str:
    """sha256 over the files ``names`` of ``folder`` (each name, then its bytes, in name
    order); cached per file size and mtime."""
    path = Path(folder).resolve()
    stamp = tuple((st.st_size, st.st_mtime_ns) for st in ((path / n).stat() for n in names))
    return _sha256(path, tuple(names), stamp)


def adapter_sha256(path: str | Path) -> str:
    """sha256 of the adapter's config and weights (cached per file size and mtime)."""
    return files_sha256(resolve_adapter(path), ADAPTER_FILES)


def takes_logits_to_keep(model: Any) -> bool:
    """Whether the (base of a peft) ``model``'s forward takes ``logits_to_keep``."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return "logits_to_keep" in inspect.signature(base.forward).parameters


def attach_adapter(backend: TransformersBackend, path: str | Path) -> TransformersBackend:
    """Wrap ``backend.model`` with the LoRA adapter at ``path`` (unmerged, inference mode)."""
    peft = import_optional("peft", extra="train", purpose="loading a LoRA adapter (adapter_path)")
    folder = resolve_adapter(path)
    model = peft.PeftModel.from_pretrained(backend.model, str(folder), is_trainable=False)
    model.eval()
    backend.model = model
    # PeftModel.forward takes **kwargs and hands them to the base model, which reads
    # logits_to_keep: keep the fast path the base model has.
    backend.supports_logits_to_keep = takes_logits_to_keep(model)
    logger.info("attached LoRA adapter %s (sha256 %s)", folder, adapter_sha256(folder)[:16])
    return backend
