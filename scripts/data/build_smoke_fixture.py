"""Write the synthetic smoke fixture (graded candidates, deliberately imperfect first stage)."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from presentation_dependence.data.smoke import build_smoke_fixture


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--out", default="data/smoke", help="output folder (fixture.jsonl)")
    p.add_argument("--seed", type=int, default=13)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
    path = build_smoke_fixture(args.out, seed=args.seed)
    logging.getLogger("build_smoke_fixture").info("wrote %s", path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
