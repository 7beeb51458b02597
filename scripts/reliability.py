"""Run the hostile reliability cases and write docs/RELIABILITY.md (``poe reliability``).

    python scripts/reliability.py [--out docs/RELIABILITY.md] [--only NAME-PART]

Exit 0 when every case behaved as expected, 1 otherwise (the table says which).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from presdep_tools.reliability import CaseResult, render_markdown, run_cases
from presdep_tools.reliability.cases import CASES
from presdep_tools.reliability.workspace import capture_logs
from presentation_dependence.io.atomic import atomic_write_text


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default="docs/RELIABILITY.md")
    p.add_argument("--only", help="run only cases whose name contains this (no file written)")
    args = p.parse_args()
    capture_logs()  # the project's own logs stay in memory; one line per case is printed

    def show(r: CaseResult) -> None:
        print(f"[{'pass' if r.passed else 'FAIL'}] {r.case.name} ({r.seconds:.1f} s): {r.observed}")

    results = run_cases(CASES, only=args.only, on_result=show)
    if args.only is None:
        text = render_markdown(results, command="python scripts/reliability.py")
        atomic_write_text(Path(args.out), text)
        print(f"wrote {args.out}")
    failed = [r.case.name for r in results if not r.passed]
    print(f"{len(results) - len(failed)} of {len(results)} cases passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
