"""Run fit probes of a ladder (training/fit_probe.py) and write their table into docs/studies/fit-diagnosis.md.

    uv run python scripts/train/fit_probe.py configs/probes/fit-ladder.yaml [NAME ...]
    uv run python scripts/train/fit_probe.py configs/probes/fit-ladder.yaml --doc-only

A probe whose ``runs/fit-probe/<name>/probe.json`` holds a finished run of the same config is
not rerun. The doc block is rewritten from every finished probe.json of the ladder.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from presentation_dependence.errors import PresdepError
from presentation_dependence.report.markers import splice_file
from presentation_dependence.training.fit_probe import ladder_table, load_ladder, run_probe

log = logging.getLogger("fit_probe")


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("ladder", help="a ladder YAML (configs/probes/fit-ladder.yaml)")
    p.add_argument("names", nargs="*", help="probes to run (default: all)")
    p.add_argument("--out", default="runs/fit-probe", help="probe folders go here")
    p.add_argument(
        "--doc", default="docs/studies/fit-diagnosis.md", help="doc with a fit-ladder block"
    )
    p.add_argument("--doc-only", action="store_true", help="only rewrite the doc block")
    p.add_argument("--threads", type=int, default=None, help="torch threads")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    try:
        ladder = load_ladder(args.ladder)
        unknown = [n for n in args.names if n not in ladder]
        if unknown:
            log.error("unknown probe(s) %s; the ladder has %s", unknown, sorted(ladder))
            return 2
        if args.threads:
            import torch

            torch.set_num_threads(args.threads)
        for name in args.names or ([] if args.doc_only else list(ladder)):
            done = Path(args.out) / name / "probe.json"
            if done.is_file():
                saved = json.loads(done.read_text(encoding="utf-8"))
                if saved.get("config") == asdict(ladder[name]) and "seconds" in saved:
                    log.info("%s: finished already, kept", name)
                    continue
            run_probe(ladder[name], args.out)
        results = []
        for name in ladder:
            path = Path(args.out) / name / "probe.json"
            if path.is_file():
                saved = json.loads(path.read_text(encoding="utf-8"))
                if "seconds" in saved:
                    results.append(saved)
        if results and args.doc:
            splice_file(args.doc, "fit-ladder", ladder_table(results))
            log.info("wrote the fit-ladder block of %s (%d probes)", args.doc, len(results))
    except (PresdepError, OSError) as e:
        log.error("%s", e)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
