"""How large a submission is, weighed the way the workplace weighs it before it lands.

A stop submits the commits on ``main`` since the session's checkout, and two limits apply
(the workplace's *env* notes): the commits **packed as git sends them** at most 512 MiB, and
**their diffs added up as text** at most 256 MiB, where a file added in one commit and removed
in a later one counts twice. Two stops in a row were refused for size (2026-12-07) while the
pack was far below its limit, so the diff limit is the one checkpoints hit, and this tool counts
it the conservative way: a binary file's whole content on each side of a change (the bytes a
diff of it "as text" would carry), a text file's unified diff. Stop 55, which landed, weighs
248 MiB this way; an optimizer state, two adapters and a tokenizer (a training checkpoint
here) are about 80 MiB each time they are added *or* deleted.

``uv run poe submission-size`` (``scripts/submission_size.py``; base: the commit ``main`` was checked out at, from its reflog;
``--base REV`` to choose) prints both figures against their limits and the largest
contributors, and exits 1 when either is over ``--margin`` of its limit.
"""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path

__all__ = ["Change", "Weight", "checkout_base", "over_limits", "report", "weigh"]

MIB = 1 << 20
PACK_LIMIT = 512 * MIB
DIFF_LIMIT = 256 * MIB
NULL_SHA = "0" * 40


@dataclasses.dataclass(frozen=True)
class Change:
    """One path changed by one commit, and what it adds to the diff total."""

    commit: str
    path: str
    status: str  # A, D, M, T (git's letters; renames are counted as a delete and an add)
    binary: bool
    diff_bytes: int


@dataclasses.dataclass(frozen=True)
class Weight:
    base: str
    head: str
    commits: int
    pack_bytes: int
    changes: tuple[Change, ...]

    @property
    def diff_bytes(self) -> int:
        return sum(c.diff_bytes for c in self.changes)


def _git(repo: Path, *args: str, data: bytes | None = None) -> bytes:
    return subprocess.run(
        ["git", "-C", str(repo), *args], input=data, capture_output=True, check=True
    ).stdout


def checkout_base(repo: Path, branch: str = "main") -> str:
    """The commit ``branch`` pointed at when it was created here: its oldest reflog entry."""
    out = _git(repo, "reflog", "show", "--format=%H", f"refs/heads/{branch}").decode().split()
    if not out:
        raise SystemExit(f"submission-size: {branch} has no reflog here; pass --base REV")
    return out[-1]


def _blob_size(repo: Path, sha: str) -> int:
    return 0 if sha == NULL_SHA else int(_git(repo, "cat-file", "-s", sha))


def _commit_changes(repo: Path, commit: str) -> list[Change]:
    parents = _git(repo, "rev-list", "--parents", "-n", "1", commit).decode().split()[1:]
    parent = (
        parents[0]
        if parents
        else _git(repo, "hash-object", "-t", "tree", "/dev/null").decode().strip()
    )
    raw = _git(repo, "diff-tree", "-r", "--no-renames", "--raw", parent, commit).decode()
    numstat = _git(repo, "diff-tree", "-r", "--no-renames", "--numstat", parent, commit).decode()
    binary = {line.split("\t", 2)[2] for line in numstat.splitlines() if line.startswith("-\t-\t")}
    changes = []
    for line in raw.splitlines():
        meta, path = line.split("\t", 1)
        _, _, old, new, status = meta.split()
        if path in binary:
            size = _blob_size(repo, old) + _blob_size(repo, new)
        else:
            size = len(_git(repo, "diff", parent, commit, "--", path))
        changes.append(Change(commit, path, status[0], path in binary, size))
    return changes


def weigh(repo: Path, base: str, head: str = "HEAD") -> Weight:
    """The pack of ``base..head`` as git sends it (thin, deltas against the base) and every
    commit's changes."""
    commits = _git(repo, "rev-list", "--reverse", f"{base}..{head}").decode().split()
    pack = _git(
        repo,
        "pack-objects",
        "--revs",
        "--thin",
        "--stdout",
        "-q",
        data=f"{head}\n^{base}\n".encode(),
    )
    changes = tuple(c for commit in commits for c in _commit_changes(repo, commit))
    return Weight(base, head, len(commits), len(pack), changes)


def report(weight: Weight, top: int = 10) -> str:
    lines = [
        f"{weight.commits} commit(s) {weight.base[:10]}..{weight.head}",
        f"packed: {weight.pack_bytes / MIB:.1f} MiB of {PACK_LIMIT // MIB} MiB",
        f"diffs (binary files whole, each side): {weight.diff_bytes / MIB:.1f} MiB of {DIFF_LIMIT // MIB} MiB",
    ]
    by_path: dict[tuple[str, str], int] = {}
    for c in weight.changes:
        by_path[(c.status, c.path)] = by_path.get((c.status, c.path), 0) + c.diff_bytes
    largest = sorted(by_path.items(), key=lambda kv: -kv[1])[:top]
    if largest:
        lines.append("largest contributors (status, MiB, path):")
        lines += [f"  {s} {n / MIB:8.2f}  {p}" for (s, p), n in largest]
    return "\n".join(lines)


def over_limits(weight: Weight, margin: float) -> list[str]:
    """The figures above ``margin`` of their limit: ``packed``, ``diffs``."""
    pairs = (("packed", weight.pack_bytes, PACK_LIMIT), ("diffs", weight.diff_bytes, DIFF_LIMIT))
    return [name for name, used, limit in pairs if used > margin * limit]
