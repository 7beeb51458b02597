"""Compare scorers on the same QA questions and write the table into docs/QA.md.

``python scripts/qa_compare.py LABEL=RUN_DIR [LABEL=RUN_DIR ...] [--exclude-from FIXTURE ...]``

Each RUN_DIR is a ``presdep qa`` run folder (``qa/qa_metrics.json``); the first is the
reference every other scorer is paired against. ``--exclude-from`` takes fixture JSONL files
(e.g. the training study's ``data/study/hotpotqa-*.jsonl``) whose query ids are dropped from the
comparison. The table goes between ``<!-- qa-variants:start -->`` and ``<!-- qa-variants:end -->``
of ``--doc`` (docs/QA.md), or to stdout with ``--doc -``.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from presentation_dependence.errors import PresdepError
from presentation_dependence.qa.compare import compare_qa, render_comparison
from presentation_dependence.qa.report import measured_by
from presentation_dependence.report.markers import splice_file

log = logging.getLogger("presentation_dependence.scripts.qa_compare")


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("runs", nargs="+", metavar="LABEL=RUN_DIR")
    p.add_argument("--exclude-from", nargs="*", default=[], type=Path, metavar="FIXTURE")
    p.add_argument("--variant", default="random_shuffle")
    p.add_argument("--doc", default="docs/QA.md", help="document to splice into; '-' = stdout")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    metrics, lines = {}, []
    for item in args.runs:
        label, _, folder = item.partition("=")
        path = Path(folder, "qa", "qa_metrics.json")
        if not folder or not path.is_file():
            log.error("%s: expected LABEL=RUN_DIR with %s", item, path)
            return 2
        metrics[label] = json.loads(path.read_text(encoding="utf-8"))
        prov = Path(folder, "provenance.json")
        by = measured_by(json.loads(prov.read_text(encoding="utf-8")) if prov.exists() else {})
        lines.append(f"- {label}: {by}")
    exclude = set()
    for fixture in args.exclude_from:
        try:
            text = fixture.read_text(encoding="utf-8")
        except OSError as err:
            log.error("--exclude-from %s: %s", fixture, err)
            return 2
        for n, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    exclude.add(str(json.loads(line)["qid"]))
                except (ValueError, KeyError) as err:
                    log.error("%s:%d: not a fixture line with a 'qid' (%s)", fixture, n, err)
                    return 2
    try:
        comparison = compare_qa(metrics, variant=args.variant, exclude=frozenset(exclude))
    except ValueError as err:
        log.error("%s", err)
        return 2
    note = (
        f"Excluded: the {len(comparison['excluded'])} of these questions found in "
        + ", ".join(str(f) for f in args.exclude_from)
        if args.exclude_from
        else ""
    )
    block = render_comparison(comparison, [*([note] if note else []), "", *lines])
    if args.doc == "-":
        sys.stdout.write(block)
        return 0
    try:
        splice_file(args.doc, "qa-variants", block)
    except (OSError, PresdepError) as err:
        log.error("%s", err)
        return 2
    log.info(
        "wrote %s (%d scorers, %d questions)", args.doc, len(metrics), comparison["num_questions"]
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
