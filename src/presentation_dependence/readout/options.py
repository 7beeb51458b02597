"""The options of every class that loads a local transformers model, checked in one place.

:class:`ModelOptions` (the model, device, dtype), :class:`ThreadedModelOptions` (+ torch
threads) and :class:`BatchedModelOptions` (+ prompts per pass); a subclass re-declares a field
only where its default or help differs. No torch here: :mod:`.backend` resolves these names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from presentation_dependence.errors import ConfigError
from presentation_dependence.fields import check_counts, opt

__all__ = [
    "DEVICES",
    "DTYPE_NAMES",
    "BatchedModelOptions",
    "ModelOptions",
    "ThreadedModelOptions",
    "check_device",
    "check_dtype",
]

DEVICES: Final[tuple[str, ...]] = ("auto", "cpu", "cuda")  # or "cuda:N"
DTYPE_NAMES: Final[tuple[str, ...]] = ("float32", "bfloat16", "float16")  # or "auto"


def check_device(device: object) -> None:
    if not isinstance(device, str) or (device not in DEVICES and not device.startswith("cuda:")):
        raise ConfigError(f"device must be one of {', '.join(DEVICES)} or cuda:N, got {device!r}")


def check_dtype(dtype: object) -> None:
    if dtype != "auto" and dtype not in DTYPE_NAMES:
        raise ConfigError(f"dtype must be one of auto, {', '.join(DTYPE_NAMES)}, got {dtype!r}")


def _check_flag(obj: object, name: str) -> None:
    if not isinstance(getattr(obj, name), bool):
        raise ConfigError(f"{name} must be true or false, got {getattr(obj, name)!r}")


@dataclass(frozen=True)
class ModelOptions:
    """A transformers model: name, revision, device, dtype and whether its hub code may run."""

    model_name: str = opt(
        "embedded:smollm2-135m-instruct", "`embedded:<name>`, a local model folder, or a hub name"
    )
    revision: str | None = opt(None, "hub revision (commit, tag, branch); null = default")
    device: str = opt("auto", "auto, cpu, cuda or cuda:N")
    dtype: str = opt(
        "auto",
        "auto (GPU bfloat16; CPU bfloat16 where native, else float32), float32, bfloat16, float16",
    )
    trust_remote_code: bool = opt(False, "allow model code from the hub")

    def __post_init__(self) -> None:
        if not isinstance(self.model_name, str) or not self.model_name:
            raise ConfigError(f"model_name must be a non-empty string, got {self.model_name!r}")
        if self.revision is not None and not isinstance(self.revision, str):
            raise ConfigError(f"revision must be a string or null, got {self.revision!r}")
        check_device(self.device)
        check_dtype(self.dtype)
        _check_flag(self, "trust_remote_code")


@dataclass(frozen=True)
class ThreadedModelOptions(ModelOptions):
    num_threads: int | None = opt(None, "torch.set_num_threads before each call; null = leave")

    def __post_init__(self) -> None:
        super().__post_init__()
        check_counts(self, "num_threads", nullable=True)


@dataclass(frozen=True)
class BatchedModelOptions(ThreadedModelOptions):
    batch_size: int = opt(1, "prompts per forward pass (left-padded)")
    one_at_a_time: bool = opt(False, "run prompts singly: bit-reproducible, no padding")
    presentation_batch: int = opt(
        1,
        "scoring one list under several presentations (PSI): run up to this many prompts of "
        "equal token length in one pass, unpadded (scores as one a pass where measured: "
        "docs/BENCHMARKS.md); prompts of other lengths run alone. 1 = one prompt a pass",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        check_counts(self, "batch_size", "presentation_batch")
        if self.one_at_a_time and self.presentation_batch > 1:
            raise ConfigError(
                "one_at_a_time: true runs every prompt alone, presentation_batch: "
                f"{self.presentation_batch} shares passes between presentations; set one of them"
            )
        _check_flag(self, "one_at_a_time")
