"""What each collection of a population needs, and what this machine can materialise now.

:func:`make_plan` is read-only: it looks at files, asks whether packages are installed, runs
``java -version`` and (unless told not to) opens one TCP connection per download host. Each row
gets a status:

``ready``
    ``data/<data_dir>/fixture.jsonl`` exists: the reranking input is materialised.
``offline``
    a local copy exists (``local`` in the population): ``run`` materialises it with no network
    and no Java. The row's note says when its first stage differs from the declared one.
``fetch``
    no local copy, and everything the route needs is here now (Pyserini: package, Java 21,
    network; BEIR zip: network and bm25s).
``blocked``
    no local copy and something is missing now; ``missing`` names it.
``skip``
    gated (needs a licence or an access request), manual, or not distributed at all: ``run``
    never fetches it and says why.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal
from urllib.parse import urlparse

from presentation_dependence.firststage.pyserini import PYSERINI_HOSTS
from presentation_dependence.reproduction.populations import Collection, LocalCopy, Population
from presentation_dependence.requirements import (
    Problem,
    check_java,
    check_module,
    check_network,
    reachable,
)

__all__ = ["FIXTURE", "Environment", "PlanRow", "fixture_path", "format_plan", "make_plan"]

FIXTURE = "fixture.jsonl"
Status = Literal["ready", "offline", "fetch", "blocked", "skip"]


def fixture_path(collection: Collection, data_root: Path) -> Path:
    return data_root / collection.data_dir / FIXTURE


@dataclass
class Environment:
    """What this machine has, probed once and cached. ``probe_network=False`` never connects."""

    probe_network: bool = True
    environ: Mapping[str, str] | None = None
    probe: Callable[[str], bool] = reachable
    _hosts: dict[str, bool] = field(default_factory=dict)
    _java: list[Problem | None] = field(default_factory=list)

    def reachable(self, host: str) -> bool:
        if not self.probe_network:
            return False
        if host not in self._hosts:
            self._hosts[host] = self.probe(host)
        return self._hosts[host]

    def java(self) -> Problem | None:
        if not self._java:
            self._java.append(check_java(21, self.environ))
        return self._java[0]

    def pyserini(self, index: str) -> list[Problem]:
        problems = [check_module("pyserini", "pyserini"), self.java()]
        if not Path(index).exists():
            net = check_network(PYSERINI_HOSTS, self.reachable, "Pyserini index download")
            problems.append(self._unprobed(net) if net else None)
        return [p for p in problems if p is not None]

    def beir_zip(self, url: str) -> list[Problem]:
        host = urlparse(url).hostname or url
        problems = [check_module("bm25s", "bm25", "bm25s")]
        net = check_network([host], self.reachable, "BEIR zip download")
        problems.append(self._unprobed(net) if net else None)
        return [p for p in problems if p is not None]

    def bm25s(self) -> list[Problem]:
        return [p for p in (check_module("bm25s", "bm25", "bm25s"),) if p is not None]

    def describe(self) -> list[str]:
        """One line per requirement as probed so far (what the rows' 'missing' refer to)."""
        lines = []
        for mod, extra in (("pyserini", "pyserini"), ("bm25s", "bm25"), ("ir_datasets", "irds")):
            p = check_module(mod, extra)
            lines.append(f"{mod}: " + ("installed" if p is None else f"not installed ({p.fix})"))
        java = self.java()
        lines.append(
            "java: Java 21+ found" if java is None else f"java: {java.detail}. Fix: {java.fix}"
        )
        if not self.probe_network:
            lines.append("network: not probed (--no-probe); network routes count as unavailable")
        else:
            state = ", ".join(
                f"{h} {'reachable' if ok else 'unreachable'}" for h, ok in self._hosts.items()
            )
            lines.append(f"network: {state or 'no host probed'}")
        return lines

    def _unprobed(self, p: Problem) -> Problem:
        if self.probe_network:
            return p
        return Problem(p.missing, "network not probed (--no-probe): " + p.detail, p.fix)


@dataclass(frozen=True)
class PlanRow:
    """One collection's status, route and what is missing for that route now."""

    collection: Collection
    status: Status
    route: str
    missing: tuple[str, ...] = ()
    note: str = ""
    local: LocalCopy | None = None
    route_status: Status | None = None  # for a ready row: what its route would be now

    def needs(self) -> str:
        n = self.collection.needs
        flags = [k for k in ("network", "java", "gated", "manual") if getattr(n, k)]
        if not self.collection.distributed:
            flags.append("not distributed")
        return ",".join(flags) or "-"

    def to_dict(self) -> dict[str, object]:
        c = self.collection
        return {
            "id": c.id,
            "name": c.name,
            "status": self.status,
            "route": self.route,
            "missing": list(self.missing),
            "needs": self.needs(),
            "declared_first_stage": c.first_stage.label,
            "licence": c.licence,
            "note": self.note,
            "local": self.local.path if self.local else None,
        }


def _route_row(c: Collection, root: Path, env: Environment) -> PlanRow:
    local = c.first_local(root)
    if local is not None:
        if local.layout == "beir":
            missing = tuple(p.missing for p in env.bm25s())
            return PlanRow(
                c,
                "blocked" if missing else "offline",
                "local BEIR folder + bm25s",
                missing,
                local.first_stage,
                local,
            )
        return PlanRow(c, "offline", f"local {local.layout} copy", (), local.first_stage, local)
    if not c.distributed:
        return PlanRow(c, "skip", "-", (), f"not distributed. {c.notes}".strip())
    if c.needs.gated or c.needs.manual:
        kind = "gated" if c.needs.gated else "manual"
        return PlanRow(c, "skip", "-", (), f"{kind}. {c.notes or c.licence}".strip())
    routes: list[tuple[str, list[Problem], str]] = []
    if c.source.pyserini is not None:
        routes.append(("Pyserini", env.pyserini(c.source.pyserini.index), ""))
    if c.source.beir_url:
        routes.append(
            (
                "BEIR zip + bm25s",
                env.beir_zip(c.source.beir_url),
                "bm25s emulates BM25 flat (SciFact: 0.6713 against Pyserini's 0.6789)",
            )
        )
    for name, problems, note in routes:
        if not problems:
            return PlanRow(c, "fetch", name, (), note)
    if not routes:
        return PlanRow(c, "blocked", "-", ("no route: the population gives no source",))
    names = {p.missing: None for _, problems, _ in routes for p in problems}
    detail = "; ".join(f"{n}: {', '.join(p.missing for p in ps)}" for n, ps, _ in routes)
    return PlanRow(c, "blocked", " | ".join(n for n, _, _ in routes), tuple(names), detail)


def make_plan(
    population: Population,
    *,
    root: str | Path = ".",
    data_root: str | Path = "data",
    env: Environment | None = None,
    collections: list[str] | None = None,
) -> list[PlanRow]:
    """One :class:`PlanRow` per selected collection (read-only; see the module doc)."""
    root = Path(root)
    data = root / data_root
    env = env or Environment()
    rows = []
    for c in population.select(collections):
        row = _route_row(c, root, env)
        if fixture_path(c, data).is_file():
            note = f"materialised at {fixture_path(c, data)}"
            row = replace(row, status="ready", note=note, route_status=row.status)
        rows.append(row)
    return rows


def format_plan(
    rows: list[PlanRow], *, env: Environment | None = None, as_json: bool = False
) -> str:
    """A fixed-width table with a note per row and a summary (or JSON)."""
    if as_json:
        out: dict[str, object] = {"rows": [r.to_dict() for r in rows]}
        if env is not None:
            out["environment"] = env.describe()
        return json.dumps(out, indent=1, ensure_ascii=False) + "\n"
    head = ("collection", "status", "route", "declared needs", "missing now")
    table = [head] + [
        (r.collection.id, r.status, r.route, r.needs(), ", ".join(r.missing) or "-") for r in rows
    ]
    widths = [max(len(row[i]) for row in table) for i in range(len(head))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in table]
    lines.insert(1, "  ".join("-" * w for w in widths))
    if env is not None:
        lines = ["this machine:", *(f"  {x}" for x in env.describe()), "", *lines]
    lines.append("")
    for r in rows:
        c = r.collection
        lines.append(f"{c.id}: {c.name}; declared first stage: {c.first_stage.label}")
        lines.append(f"    licence: {c.licence}")
        if r.note:
            lines.append(f"    note: {r.note}")
    counts: dict[str, list[str]] = {}
    for r in rows:
        counts.setdefault(r.status, []).append(r.collection.id)
    lines.append("")
    lines.append(
        "summary: " + "; ".join(f"{s} {len(ids)} ({', '.join(ids)})" for s, ids in counts.items())
    )
    return "\n".join(lines) + "\n"
