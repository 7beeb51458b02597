"""Run a judge study: every config of ``configs/judge/study/`` into one folder each, resumably.

A shim of ``presdep study judge`` (the same flags; studies/judge_run.py)::

    python scripts/judge_study.py [CONFIG ...] [--root runs/judge/study] [--rerun] [--gate]
        [--override block.key=value ...]

Then ``python scripts/judge_doc.py --study <root>`` renders the tables into docs/studies/judge-study.md.
"""

from __future__ import annotations

import sys

from presentation_dependence.cli import run_script

main = run_script("study", "judge")

if __name__ == "__main__":
    sys.exit(main())
