"""Compare WORK/out-before with WORK/out-after (identity_before_after.sh) -> WORK/identity.md.

    python scripts/probes/compare_outputs.py WORK BEFORE [RUN_FOLDER ...]

A file is *identical* (same bytes), *the same* (its JSON, JSONL, YAML or npz content is equal
once timing fields are left out, or the later code only adds fields), or it *differs*; exit 1
when any differs. provenance.json and run.log record invocations and are not compared.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import yaml

SKIP = {"provenance.json", "run.log"}
TIMING = {
    "seconds",
    "timings",
    "wall_seconds",
    "elapsed_s",
    "seconds_per_question",
    "cpu_seconds",
    "utc_end",  # unit_costs.jsonl: when and how long a unit ran
}
ABSENT = "<absent>"


def flat(obj: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(obj, dict):
        items = [(k, v) for k, v in obj.items() if k not in TIMING]
    elif isinstance(obj, list):
        items = list(enumerate(obj))
    else:
        return {prefix.rstrip("."): obj}
    out: dict[str, Any] = {}
    for k, v in items:
        out.update(flat(v, f"{prefix}{k}."))
    return out


def load(p: Path) -> dict[str, Any] | None:
    """``{key: value}`` of a structured file (timing fields left out); None for other files."""
    if p.suffix == ".json":
        return flat(json.loads(p.read_text()))
    if p.suffix == ".jsonl":
        return flat([json.loads(x) for x in p.read_text().splitlines() if x.strip()])
    if p.suffix == ".yaml":
        return flat(yaml.safe_load(p.read_text()))
    if p.suffix == ".npz":
        with np.load(p, allow_pickle=False) as z:
            return {k: (z[k].dtype.str, z[k].shape, z[k].tobytes()) for k in z.files}
    return None


def compare(pa: Path, pb: Path) -> tuple[str, bool]:
    if pa.read_bytes() == pb.read_bytes():
        return "identical", True
    a, b = load(pa), load(pb)
    if a is None or b is None:
        return "DIFFERS", False
    diff = [k for k in sorted(set(a) | set(b)) if a.get(k, ABSENT) != b.get(k, ABSENT)]
    if not diff:
        return "same content (key order or timing fields differ)", True
    if all(k not in a for k in diff):  # only keys the later code writes in addition
        added = sorted({k.split(".")[-1] for k in diff})
        return "same; fields added after: " + ", ".join(f"`{x}`" for x in added), True
    return "DIFFERS: " + ", ".join(f"`{k}`" for k in diff[:4]), False


def main(argv: list[str]) -> int:
    work, before, folders = Path(argv[0]), argv[1], argv[2:]
    a, b = work / "out-before", work / "out-after"
    files = sorted(
        {p.relative_to(a) for p in a.rglob("*") if p.is_file()}
        | {p.relative_to(b) for p in b.rglob("*") if p.is_file()}
    )
    rows: list[tuple[str, str]] = []
    bad = 0
    for rel in files:
        if rel.name in SKIP or any(part.startswith(".") for part in rel.parts):
            continue
        pa, pb = a / rel, b / rel
        if pa.exists() and pb.exists():
            verdict, same = compare(pa, pb)
        else:
            verdict, same = "only " + ("before" if pa.exists() else "after"), False
        rows.append((str(rel), verdict))
        bad += not same
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    identical = sum(1 for _, v in rows if v == "identical")
    lines = [
        f"# Outputs before ({before}) and after ({head.stdout.strip()})",
        "",
        "`bash scripts/probes/identity_before_after.sh` ran `presdep run --eval`, `psi` and `qa`",
        "on the tiny random test model (`rank/`: NovelEval fixture, 6 queries; `qa/`: HotpotQA,",
        "5 questions) with both codes, and recomputed the metrics of these existing run folders",
        "(copies: `presdep eval`, `psi --from-scores`, `qa --from-records`) from their results:",
        "",
        *[f"- existing-{i}: `{f}`" for i, f in enumerate(folders, 1)],
        "",
        "| file | before vs after |",
        "|---|---|",
        *[f"| `{r}` | {v} |" for r, v in rows],
        "",
        f"{len(rows)} files compared: {identical} byte-identical, {len(rows) - identical - bad} "
        "with the same results (key order or timing fields differ, or the later code adds fields), "
        f"{bad} differ. provenance.json and run.log record invocations and are not compared.",
    ]
    (work / "identity.md").write_text("\n".join(lines) + "\n")
    print(lines[-1])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
