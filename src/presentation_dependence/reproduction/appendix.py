"""The appendix map (``configs/reproduction/appendix.yaml``) and its readiness audit.

Each artifact (a table, figure or number of the paper) names the program that produces its runs,
the analyzer that turns them into the artifact, the task or experiment configs it needs, and a
``runnable`` flag with a ``reason`` when it is false::

    artifacts:
      - id: tab-reranking-main
        title: nDCG@10 of the readout on the 18 reranking collections
        kind: table                          # table | figure | number
        program: "python scripts/study.py stage run --task passage-reranking --stage rerank"
        analyzer: "python scripts/summarize_runs.py"       # or "package.module:function"
        task: passage-reranking
        configs: []                           # configs/experiments/<id>.yaml it runs
        data: []                              # other paths that must exist
        runnable: true
        reason: ""

:func:`audit` checks, without importing heavy modules or running anything, that the program
and analyzer exist (a script file, a ``presdep`` subcommand, a command on ``PATH`` or a function
defined in a module's source), that the task and configs load, and how much of their data is
on disk. It reports what it finds, including a ``runnable: true`` artifact whose program is
missing (``broken``) and a ``runnable: false`` one that could in fact run.
"""

from __future__ import annotations

import ast
import importlib.util
import shlex
import shutil
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from presentation_dependence.config import load_experiment_config
from presentation_dependence.config.loader import load_config
from presentation_dependence.data.config import resolve_path
from presentation_dependence.errors import ConfigError, PresdepError
from presentation_dependence.fields import build_dataclass
from presentation_dependence.reproduction.tasks import expand_jobs, load_task

__all__ = ["APPENDIX", "Appendix", "Artifact", "AuditRow", "audit", "format_audit", "load_appendix"]

APPENDIX = Path("configs/reproduction/appendix.yaml")


@dataclass(frozen=True)
class Artifact:
    id: str
    title: str
    kind: Literal["table", "figure", "number"]
    program: str
    analyzer: str
    runnable: bool
    task: str | None = None
    configs: list[str] = field(default_factory=list)
    data: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    legacy_ids: list[str] = field(default_factory=list)
    reason: str = ""

    def __post_init__(self) -> None:
        if not self.runnable and not self.reason:
            raise ConfigError(f"artifact {self.id!r}: runnable is false, so give a reason")


@dataclass(frozen=True)
class Appendix:
    artifacts: list[Artifact]
    description: str = ""

    def __post_init__(self) -> None:
        ids = [a.id for a in self.artifacts]
        dup = {i for i in ids if ids.count(i) > 1}
        if dup:
            raise ConfigError(f"appendix: duplicate artifact ids {sorted(dup)}")

    def get(self, artifact_id: str) -> Artifact:
        for a in self.artifacts:
            if a.id == artifact_id:
                return a
        raise ConfigError(
            f"no artifact {artifact_id!r}; known: {', '.join(a.id for a in self.artifacts)}"
        )


def load_appendix(path: str | Path = APPENDIX) -> Appendix:
    return load_config(path, lambda raw, stem: build_dataclass(Appendix, raw), family="appendix")


def _defines(module: str, name: str) -> bool:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        return False
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    return any(
        isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)) and n.name == name
        for n in tree.body
    )


def check_command(command: str, root: Path, presdep_commands: Collection[str]) -> str | None:
    """``None`` when ``command`` can be found, else what is missing (nothing is run).

    ``presdep_commands``: the CLI's subcommands (the CLI passes its own; this layer is below it).
    """
    if ":" in command and " " not in command:
        module, _, func = command.partition(":")
        try:
            found = _defines(module, func)
        except (ImportError, ValueError, SyntaxError):
            found = False
        return None if found else f"{module} does not define {func}"
    argv = shlex.split(command)
    if not argv:
        return "empty command"
    if argv[0] == "python" and len(argv) > 1:
        if argv[1] == "-m":
            mod = argv[2] if len(argv) > 2 else ""
            return None if mod and importlib.util.find_spec(mod) else f"no module {mod!r}"
        return None if (root / argv[1]).is_file() else f"no script {argv[1]}"
    if argv[0] == "presdep":
        sub = argv[1] if len(argv) > 1 else ""
        return None if sub in presdep_commands else f"no 'presdep {sub}' subcommand"
    return None if shutil.which(argv[0]) else f"{argv[0]!r} is not on PATH"


def _data_state(artifact: Artifact, root: Path) -> tuple[int, int, list[str]]:
    """(units with data, units, problems) over the task's jobs and the configs."""
    have, total, problems = 0, 0, []
    if artifact.task:
        try:
            jobs = expand_jobs(load_task(artifact.task, root), root=root)
        except (ConfigError, PresdepError) as e:
            return 0, 0, [f"task {artifact.task!r}: {e}"]
        total += len(jobs)
        done = sum(1 for j in jobs if (root / j.run_dir / "metrics.json").is_file())
        problems.append(f"evaluated {done}/{len(jobs)} jobs")
        have += sum(
            1 for j in jobs if (root / "data" / j.collection.data_dir / "fixture.jsonl").is_file()
        )
    for path in artifact.data:
        total += 1
        if (root / path).exists():
            have += 1
        else:
            problems.append(f"data {path} is missing")
    for cfg_path in artifact.configs:
        total += 1
        try:
            cfg = load_experiment_config(root / cfg_path)
        except PresdepError as e:
            problems.append(f"config {cfg_path}: {e}")
            continue
        try:
            for key in ("path", "run", "corpus", "topics", "qrels"):
                spec = getattr(cfg.data, key)
                if isinstance(spec, str):
                    spec = str(root / spec)
                elif isinstance(spec, list):
                    spec = [str(root / p) for p in spec]
                resolve_path(spec, key, required=False)
            have += 1
        except ConfigError as e:
            problems.append(f"data of {cfg_path}: {e}")
    return have, total, problems


@dataclass(frozen=True)
class AuditRow:
    artifact: Artifact
    status: Literal["ready", "partial", "blocked", "broken", "not runnable"]
    detail: str


def audit(
    appendix: Appendix, root: str | Path, presdep_commands: Collection[str]
) -> list[AuditRow]:
    """One :class:`AuditRow` per artifact (see the module doc); ``presdep_commands`` as in
    :func:`check_command`."""
    root = Path(root)
    rows = []
    for a in appendix.artifacts:
        missing = [
            m
            for m in (check_command(c, root, presdep_commands) for c in (a.program, a.analyzer))
            if m
        ]
        have, total, problems = _data_state(a, root)
        broken = missing + [p for p in problems if p.startswith(("config", "task"))]
        info = [p for p in problems if p.startswith("evaluated")]
        problems = [p for p in problems if not p.startswith("evaluated")]
        data = ", ".join([f"data for {have}/{total}" if total else "no data needed", *info])
        if not a.runnable:
            could = not broken and have == total
            extra = " (yet its program, analyzer and data are all present)" if could else ""
            rows.append(AuditRow(a, "not runnable", f"{a.reason}{extra}"))
        elif broken:
            rows.append(AuditRow(a, "broken", "declared runnable, but " + "; ".join(broken)))
        elif total and have == 0:
            rows.append(
                AuditRow(a, "blocked", f"{data}; " + ("; ".join(problems) or "no data yet"))
            )
        elif total and have < total:
            rows.append(AuditRow(a, "partial", data))
        else:
            rows.append(AuditRow(a, "ready", data))
    return rows


def format_audit(rows: list[AuditRow]) -> str:
    width = max(len(r.artifact.id) for r in rows)
    lines = [f"{r.artifact.id.ljust(width)}  {r.status:<12}  {r.detail}" for r in rows]
    counts: dict[str, int] = {}
    for r in rows:
        counts[r.status] = counts.get(r.status, 0) + 1
    lines.append("")
    lines.append("summary: " + ", ".join(f"{n} {s}" for s, n in counts.items()))
    return "\n".join(lines) + "\n"
