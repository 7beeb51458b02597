"""Render the judge studies' measured sections (docs/studies/judge-*.md) from run folders.

``python scripts/judge_doc.py RUN_DIR [--doc DOC] [--block NAME]``: the ``judge-measured``
section (or the section NAME) from a ``presdep noise`` folder, into the study page that holds
that block (:data:`BLOCK_DOCS`) unless ``--doc`` names another.
``python scripts/judge_doc.py --study ROOT [--figure PNG]``: the ``judge-study`` section (and its
accuracy-by-slot figure) from a study root written by ``scripts/judge_study.py``, with the calls
and estimated CPU time of the ``--plan`` configs (default: every config of configs/judge/study/),
into docs/studies/judge-study.md unless ``--doc`` names another.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from presentation_dependence.studies.judge_docs import update_doc, update_study_doc

# The study page that holds each block (docs/generated_blocks.yaml lists them all).
BLOCK_DOCS = {
    "judge-measured": Path("docs/studies/judge-nway-v1-gsm8k.md"),
    "judge-vllm-noise": Path("docs/studies/judge-vllm-noise.md"),
    "judge-vllm-replicate": Path("docs/studies/judge-vllm-noise.md"),
}
STUDY_DOC = Path("docs/studies/judge-study.md")

if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run_dir", type=Path, nargs="?")
    p.add_argument(
        "--doc", type=Path, help="the doc to write (default: the study page of the block)"
    )
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
        doc = a.doc or BLOCK_DOCS.get(a.block, STUDY_DOC)
        update_doc(doc, a.run_dir, a.block)
        log.info("updated %s from %s", doc, a.run_dir)
    if a.study is not None:
        doc = a.doc or STUDY_DOC
        update_study_doc(doc, a.study, a.figure, a.plan)
        log.info("updated %s from the study %s", doc, a.study)
