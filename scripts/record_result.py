"""Record an evaluated run folder in docs/results_index.yaml (config id, commit, seeds, metrics).

    python scripts/record_result.py runs/example-scifact-smollm2/docs [--artifact ID] [--note TEXT]

Re-recording the same folder replaces its entry. The folder must hold resolved_config.yaml,
provenance.json and metrics.json (run 'presdep eval' first).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from presentation_dependence.cli import setup_logging
from presentation_dependence.errors import PresdepError
from presentation_dependence.reproduction.results_index import INDEX, record_result

log = logging.getLogger("presentation_dependence.scripts.record_result")


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("run_dirs", nargs="+", help="evaluated run folders")
    p.add_argument("--index", default=str(INDEX), help="the results index YAML")
    p.add_argument("--artifact", help="appendix artifact id this result belongs to")
    p.add_argument("--note", help="free text kept with the entry")
    p.add_argument("-v", "--verbose", action="store_true")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    setup_logging(args.verbose)
    try:
        for run_dir in args.run_dirs:
            e = record_result(run_dir, index=args.index, artifact=args.artifact, note=args.note)
            metrics = ", ".join(f"{k} {v:.4f}" for k, v in e["metrics"].items())
            print(f"recorded {e['config_id']} ({run_dir}) in {args.index}: {metrics}")
    except PresdepError as e:
        log.error("%s", e)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
