"""Render docs/JUDGE.md's measured sections from run folders.

``python scripts/judge_doc.py RUN_DIR [--doc docs/JUDGE.md] [--block NAME]``: the
``judge-measured`` section (or the section NAME) from a ``presdep noise`` folder.
``python scripts/judge_doc.py --study ROOT [--figure PNG]``: the ``judge-study`` section (and its
accuracy-by-slot figure) from a study root written by ``scripts/judge_study.py``, with the calls
and estimated CPU time of the ``--plan`` configs (default: every config of configs/judge/study/).
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from presentation_dependence.judge.docs import update_doc, update_study_doc

if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run_dir", type=Path, nargs="?")
    p.add_argument("--doc", type=Path, default=Path("docs/JUDGE.md"))
    p.add_argument("--block", default="judge-measured", help="the section RUN_DIR renders into")
    p.add_argument("--study", type=Path, help="a study root (scripts/judge_study.py)")
    p.add_argument(
        "--figure", type=Path, default=Path("docs/results/judge-study/slot_accuracy.png")
    )
    p.add_argument(
        "--plan",
        type=Path,
        nargs="*",
        default=sorted(Path("configs/judge/study").glob("*.yaml")),
        help="configs whose calls and CPU time to estimate (default: configs/judge/study/)",
    )
    a = p.parse_args()
    if a.run_dir is None and a.study is None:
        p.error("give RUN_DIR, --study ROOT, or both")
    logging.basicConfig(level=logging.INFO)
    log = logging.getLogger("judge_doc")
    if a.run_dir is not None:
        update_doc(a.doc, a.run_dir, a.block)
        log.info("updated %s from %s", a.doc, a.run_dir)
    if a.study is not None:
        update_study_doc(a.doc, a.study, a.figure, a.plan)
        log.info("updated %s from the study %s", a.doc, a.study)
