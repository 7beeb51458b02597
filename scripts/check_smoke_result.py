"""Fail unless the smoke run's nDCG@10 equals an independent recomputation from the fixture."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from presentation_dependence.data.smoke import check_smoke_metrics


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--fixture", default="data/smoke/fixture.jsonl")
    p.add_argument("--run-dir", required=True)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
    log = logging.getLogger("check_smoke_result")
    metrics = json.loads((Path(args.run_dir) / "metrics.json").read_text(encoding="utf-8"))
    problems = check_smoke_metrics(args.fixture, metrics)
    for p in problems:
        log.error("%s", p)
    if problems:
        return 1
    log.info(
        "smoke OK: nDCG@10 = %.4f over %d queries, equal to the independent formula",
        metrics["mean"].get("ndcg@10", metrics["mean"].get("ndcg_cut_10")),
        metrics["num_queries"],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
