"""Speed levers of the transformers readout and student: the CPU dtype, attention, compiled layers.

Both are chosen by ``uv run poe bench`` (``docs/BENCHMARKS.md``), each measured on and off in
one run on the embedded model at the project's prompt shapes (20 passages, ~2k tokens):

* ``attn_implementation``: ``sdpa`` (PyTorch's fused causal attention; on CPU a flash kernel
  that skips the masked half) or ``eager`` (transformers' matmul + float32 softmax over the
  full T x T scores). ``sdpa`` is the default: ``eager`` is several times slower at ~2k tokens.
* ``compile``: every decoder layer goes through ``torch.compile`` (inductor, ``dynamic=True``
  so one graph serves every prompt length), which fuses the elementwise work around the
  matmuls (RMSNorm, rotary embedding, SwiGLU, dtype casts) that dominates the rest of a
  forward pass once the matmuls run on AMX. The attention and the matmuls stay the same ATen
  kernels. The mask is still built outside the compiled layers, so a single unpadded prompt
  keeps SDPA's ``is_causal`` fast path (compiling the whole model would materialise the mask:
  transformers cannot skip it while tracing, and the masked kernel is about twice as slow).
  ``auto`` compiles on CPU where a C++ compiler is found (inductor needs one) and not on GPU,
  where it has not been measured (``scripts/device/gpu_check.py --compile`` measures it).
  Off by default. Compiled scores are bit-stable across processes whatever a process
  compiled before (tested: ``tests/readout/test_speed.py``), a compiled training run killed
  and resumed ends with the uninterrupted adapter (``tests/training/test_resume.py``), and
  a bfloat16 OC-SFT step on AMX costs 1.48x fewer CPU seconds compiled (the recipe search
  trains so), but compiled scores differ from eager ones
  by ~1e-6 in float32, so switching the default would change every score of a config that
  does not name ``compile``; and on an AVX2-only CPU in float32 it pays nothing (1.03x,
  ``docs/results/bench/compile-and-shared-pass-2026-12-05.json``; docs/SCORING.md section 4).

* ``dtype: auto`` on CPU (:func:`cpu_default_dtype`): bfloat16 where the processor computes it
  natively (AVX512-BF16 or AMX tiles, as torch reports them), float32 elsewhere. On an AMX
  machine bfloat16 scored 2.0x the documents per second of float32 (``poe bench``, expected
  grades within 0.06); on an AVX2-only one (AMD EPYC, 2026-12-04) torch emulates it and one
  DL19 prompt (B = 20, 1,771 tokens, one thread) took 68 s in bfloat16 against 15 s in
  float32, so there ``auto`` keeps float32. The resolved dtype is recorded with every run
  (``describe()``); a config that names a dtype gets it on every machine.

Compiled layers are switched on per call (:class:`LayerCompiler`), so a backend shared with a
generating reranker keeps its eager layers for ``generate``; a student enables them for good.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final, Literal

import torch

from presentation_dependence.errors import ConfigError

__all__ = [
    "ATTN_IMPLEMENTATIONS",
    "DEFAULT_ATTN_IMPLEMENTATION",
    "RECOMPILE_LIMIT",
    "LayerCompiler",
    "check_attn_implementation",
    "check_compile",
    "cpu_default_dtype",
    "cpu_has_native_bfloat16",
    "cxx_compiler",
    "decoder_layers",
    "resolve_compile",
]

logger = logging.getLogger(__name__)

ATTN_IMPLEMENTATIONS: Final[tuple[str, ...]] = ("sdpa", "eager")
# Graphs dynamo may keep per decoder-layer class. Each kind of call is a graph of its own:
# grad mode or inference, the first layer's input without grad and the others' with it, a
# batch of one (specialised) or more, an attention mask or none, the dtype and the thread
# count. Training and serving one model in a process reaches torch's default of 8; past the
# limit dynamo runs the layer eagerly, correct but slow, so enabling raises it to this.
RECOMPILE_LIMIT: Final[int] = 64
DEFAULT_ATTN_IMPLEMENTATION: Final[str] = "sdpa"
CompileChoice = bool | Literal["auto"]


def cpu_has_native_bfloat16(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """Whether this CPU has bfloat16 arithmetic in hardware (AVX512-BF16 or AMX tiles).

    Asked of torch's own CPU feature checks; a torch without them reads the Linux
    ``/proc/cpuinfo`` flags, and anything else counts as no.
    """
    checks = [
        getattr(torch.cpu, n, None) for n in ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    ]
    if all(callable(c) for c in checks):
        return any(bool(c()) for c in checks)  # type: ignore[misc]
    try:
        with cpuinfo.open(encoding="utf-8") as f:
            flags = {w for line in f if line.startswith("flags") for w in line.split()}
    except OSError:
        return False
    return bool(flags & {"avx512_bf16", "amx_bf16"})


def cpu_default_dtype() -> str:
    """What ``dtype: auto`` means on this CPU: bfloat16 where native, else float32 (module doc)."""
    return "bfloat16" if cpu_has_native_bfloat16() else "float32"


def cxx_compiler() -> str | None:
    """The C++ compiler inductor would use on CPU (``$CXX``, else g++, clang++, c++), or None."""
    cxx = os.environ.get("CXX")
    if cxx:
        return shutil.which(cxx)
    for name in ("g++", "clang++", "c++"):
        path = shutil.which(name)
        if path:
            return path
    return None


def check_compile(value: object) -> None:
    """ConfigError unless ``value`` is ``"auto"``, ``True`` or ``False`` (not 0 or 1)."""
    if not (value == "auto" or isinstance(value, bool)):
        raise ConfigError(f"compile must be auto, true or false, got {value!r}")


def check_attn_implementation(value: object) -> None:
    """ConfigError unless ``value`` is one of :data:`ATTN_IMPLEMENTATIONS`."""
    if value not in ATTN_IMPLEMENTATIONS:
        raise ConfigError(
            f"attn_implementation must be one of {ATTN_IMPLEMENTATIONS}, got {value!r}"
        )


def resolve_compile(
    value: CompileChoice, device: torch.device, dtype: torch.dtype | None = None
) -> bool:
    """``auto`` -> on for bfloat16 on CPU with a C++ compiler (where compiled layers were
    measured to pay: docs/studies/cpu-probes.md), off in float32 (1.03x a readout, measured on
    AVX2) and on GPU (not measured); ``True`` needs a compiler on CPU."""
    check_compile(value)
    if value == "auto":
        return device.type == "cpu" and dtype == torch.bfloat16 and cxx_compiler() is not None
    if value and device.type == "cpu" and cxx_compiler() is None:
        raise ConfigError(
            "compile: true needs a C++ compiler for torch.compile on CPU (inductor), and none "
            "was found ($CXX, g++, clang++, c++). Fix: install g++ or set compile: false"
        )
    return bool(value)


def decoder_layers(model: Any) -> list[torch.nn.Module]:
    """The model's stack of decoder layers (through a peft wrapper), or [] if none is found.

    The stack is the ``ModuleList`` whose length is the text config's ``num_hidden_layers``.
    """
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    config = getattr(base, "config", None)
    if config is not None and hasattr(config, "get_text_config"):
        config = config.get_text_config()
    n = getattr(config, "num_hidden_layers", None)
    for _, module in base.named_modules():
        if isinstance(module, torch.nn.ModuleList) and len(module) == n and n:
            return list(module)
    return []


class LayerCompiler:
    """``torch.compile`` d decoder layers of one model, switched on and off per call.

    The compiled callables are made on the first :meth:`enable`; inductor compiles on the
    first forward pass of each new kind of call (inference, training, batch of one or more)
    and serves every prompt length after that. All layers of a model share one graph.
    """

    def __init__(self, model: Any) -> None:
        self.layers = decoder_layers(model)
        self._impls: list[Any] | None = None
        self.enabled = False
        if not self.layers:
            logger.warning(
                "no decoder layer stack found in %s: compile has no effect", type(model).__name__
            )

    def enable(self) -> None:
        dynamo_config = torch._dynamo.config
        if dynamo_config.recompile_limit < RECOMPILE_LIMIT:
            dynamo_config.recompile_limit = RECOMPILE_LIMIT
        if self._impls is None:
            t0 = time.perf_counter()
            self._impls = [torch.compile(layer._call_impl, dynamic=True) for layer in self.layers]
            logger.info(
                "compile: %d decoder layers wrapped (inductor compiles on the first forward), "
                "%.2f s",
                len(self.layers),
                time.perf_counter() - t0,
            )
        # nn.Module.__call__ runs ``_compiled_call_impl`` when it is set (what
        # ``Module.compile`` sets); clearing it restores the eager layer.
        for layer, impl in zip(self.layers, self._impls, strict=True):
            layer._compiled_call_impl = impl
        self.enabled = True

    def disable(self) -> None:
        for layer in self.layers:
            layer._compiled_call_impl = None
        self.enabled = False

    @contextlib.contextmanager
    def active(self, on: bool) -> Iterator[None]:
        """Compiled layers inside the block when ``on``, eager ones when not; then as before."""
        was = self.enabled
        self._set(on)
        try:
            yield
        finally:
            self._set(was)

    def _set(self, on: bool) -> None:
        if on and not self.enabled:
            self.enable()
        elif not on and self.enabled:
            self.disable()
