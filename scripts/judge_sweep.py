"""N-way judge placement sweep (or `task: rank`): ``python scripts/judge_sweep.py CONFIG [--out DIR]``.

Same as ``presdep judge``; see ``presdep judge --help``.
"""

from __future__ import annotations

import sys

from presentation_dependence.cli import main

if __name__ == "__main__":
    sys.exit(main(["judge", *sys.argv[1:]]))
