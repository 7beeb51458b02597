"""Render docs/JUDGE.md's measured section from a ``presdep noise`` output folder.

``python scripts/judge_doc.py RUN_DIR [--doc docs/JUDGE.md]``
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from presentation_dependence.judge.docs import update_doc

if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run_dir", type=Path)
    p.add_argument("--doc", type=Path, default=Path("docs/JUDGE.md"))
    a = p.parse_args()
    logging.basicConfig(level=logging.INFO)
    update_doc(a.doc, a.run_dir)
    logging.getLogger("judge_doc").info("updated %s from %s", a.doc, a.run_dir)
