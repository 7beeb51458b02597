"""Weigh the commits since the checkout against the workplace's submission limits.

    uv run poe submission-size [--base REV] [--margin 0.75]

Prints the packed size and the diffs (binary files whole, each side) against their limits and
the largest contributors; exits 1 when either is over ``--margin`` of its limit
(presdep_tools/submission.py says how each is counted and why).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from presdep_tools.submission import checkout_base, over_limits, report, weigh


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="submission-size", description=__doc__.split("\n\n")[0])
    ap.add_argument("--repo", type=Path, default=Path())
    ap.add_argument("--base", help="the landed commit (default: where main was checked out)")
    ap.add_argument("--head", default="HEAD")
    ap.add_argument("--margin", type=float, default=0.75, help="fail above this share of a limit")
    ap.add_argument("--top", type=int, default=10)
    args = ap.parse_args(argv)
    base = args.base or checkout_base(args.repo)
    weight = weigh(args.repo, base, args.head)
    print(report(weight, args.top))
    over = over_limits(weight, args.margin)
    if over:
        print(f"over {args.margin:.0%} of the limit: {', '.join(over)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
