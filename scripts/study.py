"""The reproduction study: tasks, their stages, and the appendix map (a shim of ``presdep study``).

    python scripts/study.py task list
    python scripts/study.py task show --task passage-reranking          # jobs and data readiness
    python scripts/study.py task generate --task passage-reranking      # one config per job
    python scripts/study.py stage list --task passage-reranking
    python scripts/study.py stage run --task passage-reranking --stage rerank [--jobs 'dl19--*'] [--dry-run]
    python scripts/study.py appendix list
    python scripts/study.py appendix audit [--strict]                   # readiness, honestly
    python scripts/study.py appendix show tab-reranking-main

A stage runs its command for every job whose data is materialised (others are listed as
blocked), in order, and stops at the first failure unless --keep-going. Exit status: 0 on
success, 2 on bad input, otherwise the failing command's status; 'appendix audit --strict'
exits 1 when an artifact declared runnable is broken. The other actions of ``presdep study``
(plan, table, curve, judge) work here too.
"""

from __future__ import annotations

import sys

from presentation_dependence.cli import run_script

main = run_script("study")

if __name__ == "__main__":
    sys.exit(main())
