"""Write the measured QA tables into docs/QA.md: ``python scripts/qa_doc.py RUN_DIR [--doc PATH]``.

Renders ``RUN_DIR/qa/qa_metrics.json`` (:func:`presentation_dependence.qa.report.render_qa_markdown`)
and the command that measured it (from ``RUN_DIR/provenance.json``) between the
``<!-- qa-results:start -->`` / ``<!-- qa-results:end -->`` markers of the document.
"""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

from presentation_dependence.errors import PresdepError
from presentation_dependence.qa.report import measured_by, render_qa_markdown
from presentation_dependence.report.markers import splice_file

log = logging.getLogger("presentation_dependence.scripts.qa_doc")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("run_dir", type=Path, help="a run folder with qa/qa_metrics.json")
    p.add_argument("--doc", type=Path, default=Path("docs/QA.md"))
    args = p.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        metrics = json.loads((args.run_dir / "qa" / "qa_metrics.json").read_text("utf-8"))
        prov_path = args.run_dir / "provenance.json"
        prov = json.loads(prov_path.read_text(encoding="utf-8")) if prov_path.exists() else {}
        block = f"{measured_by(prov)}\n\n{render_qa_markdown(metrics)}"
        splice_file(args.doc, "qa-results", block)
    except (OSError, PresdepError) as err:
        log.error("%s", err)
        return 2
    log.info("wrote %s from %s", args.doc, args.run_dir)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
