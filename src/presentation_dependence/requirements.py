"""What the Java/network first stages need, checked before any work starts.

Pyserini needs three things: the ``pyserini`` package (the ``pyserini`` extra), a Java 21+ JDK
(``JAVA_HOME``, else ``java`` on ``PATH``) and, for prebuilt indexes that are not cached yet,
network access to the hosts it downloads from. :func:`check_requirements` looks at each of them
without importing anything heavy and returns the problems; :func:`require` raises one
:class:`MissingRequirementError` that names *everything* that is missing and how to fix it, so a
user fixes all of it in one go.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import socket
import subprocess
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from presentation_dependence.errors import PresdepError
from presentation_dependence.optional import install_command

__all__ = [
    "JVM_ROOTS",
    "MissingRequirementError",
    "Problem",
    "check_java",
    "check_module",
    "check_network",
    "find_jdks",
    "java_major_version",
    "reachable",
    "require",
]

JVM_ROOTS = ("/usr/lib/jvm", "/usr/local/lib/jvm", "/opt/java", "/Library/Java/JavaVirtualMachines")
_VERSION = re.compile(r'version "(\d+)(?:\.(\d+))?[^"]*"')


class MissingRequirementError(PresdepError):
    """A package, a JDK or the network that a command needs is missing (the message says which)."""

    def __init__(self, what: str, problems: Sequence[Problem]) -> None:
        self.what = what
        self.problems = tuple(problems)
        lines = [f"cannot {what}; missing:"]
        lines += [f"  - {p.missing}: {p.detail}. Fix: {p.fix}" for p in problems]
        super().__init__("\n".join(lines))


@dataclass(frozen=True)
class Problem:
    """One missing requirement: a short name (``pyserini not installed``), details, the fix."""

    missing: str
    detail: str
    fix: str


def check_module(
    module: str, extra: str | None = None, pip_name: str | None = None
) -> Problem | None:
    """``None`` when ``module`` can be imported, else the problem (without importing it)."""
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        found = False
    if found:
        return None
    pkg = pip_name or module
    fix = (
        f"install the '{extra}' extra: {install_command(extra)}" if extra else f"pip install {pkg}"
    )
    return Problem(f"{module} not installed", f"the Python package '{pkg}' is not importable", fix)


def java_major_version(java: str | Path, timeout: float = 20.0) -> int | None:
    """The major version ``java -version`` reports (``1.8`` -> 8), or ``None`` if it cannot run."""
    try:
        res = subprocess.run(
            [str(java), "-version"], capture_output=True, text=True, timeout=timeout, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = _VERSION.search(res.stderr + res.stdout)
    if not m:
        return None
    major = int(m.group(1))
    return int(m.group(2) or 0) if major == 1 else major


def find_jdks(roots: Iterable[str | Path] = JVM_ROOTS) -> list[tuple[Path, int]]:
    """``[(JAVA_HOME candidate, major version)]`` for every JDK under ``roots``, newest first."""
    found: list[tuple[Path, int]] = []
    for root in roots:
        base = Path(root)
        if not base.is_dir():
            continue
        for home in sorted(base.iterdir()):
            java = home / "bin" / "java"
            if home.is_symlink() or not java.is_file():
                continue
            major = java_major_version(java)
            if major is not None:
                found.append((home, major))
    return sorted(found, key=lambda t: -t[1])


def check_java(
    min_major: int = 21,
    environ: Mapping[str, str] | None = None,
    jvm_roots: Iterable[str | Path] = JVM_ROOTS,
) -> Problem | None:
    """``None`` when ``$JAVA_HOME/bin/java`` (else ``java`` on ``PATH``) is Java ``min_major``+."""
    env = os.environ if environ is None else environ
    home = env.get("JAVA_HOME", "").strip()
    if home:
        java: str | None = str(Path(home) / "bin" / "java")
        where = f"JAVA_HOME={home}"
    else:
        java = shutil.which("java", path=env.get("PATH"))
        where = f"JAVA_HOME is unset and 'java' on PATH is {java}" if java else ""
    if java is None:
        where = "JAVA_HOME is unset and there is no 'java' on PATH"
        major = None
    else:
        major = java_major_version(java)
    if major is not None and major >= min_major:
        return None
    got = (
        f"{where}, which is Java {major}"
        if major is not None
        else (f"{where}, which does not run" if java else where)
    )
    good = [h for h, v in find_jdks(jvm_roots) if v >= min_major]
    fix = (
        f"export JAVA_HOME={good[0]} (a Java {min_major}+ JDK found on this machine)"
        if good
        else f"install a Java {min_major}+ JDK (e.g. Temurin {min_major}) and set JAVA_HOME to it"
    )
    return Problem(f"Java {min_major}+ not found (JAVA_HOME)", got, fix)


def reachable(host: str, port: int = 443, timeout: float = 3.0) -> bool:
    """Whether a TCP connection to ``host:port`` opens within ``timeout`` seconds."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def check_network(
    hosts: Sequence[str], probe: Callable[[str], bool] = reachable, purpose: str = "downloads"
) -> Problem | None:
    """``None`` when every host in ``hosts`` answers, else the problem naming those that do not."""
    down = [h for h in hosts if not probe(h)]
    if not down:
        return None
    return Problem(
        "no network",
        f"cannot reach {', '.join(f'{h}:443' for h in down)} ({purpose})",
        "run on a machine with internet access, or copy the data in by hand "
        "(docs/DATA-SETUP.md) and point the config at it",
    )


def require(what: str, problems: Iterable[Problem | None]) -> None:
    """Raise :class:`MissingRequirementError` listing every non-``None`` problem."""
    real = [p for p in problems if p is not None]
    if real:
        raise MissingRequirementError(what, real)
