"""Write the study's training pool (training/pool.py): fixture files per source and split.

uv run python scripts/train/prepare_pool.py --out data/pool
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from presentation_dependence.errors import PresdepError
from presentation_dependence.training.pool import DEFAULT_HELDOUT, build_pool, load_sources


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--out", default="data/pool", help="output folder")
    p.add_argument("--shared", default="../shared/data", help="the shared data folder")
    p.add_argument("--noveleval", default="fixtures/noveleval/noveleval.jsonl")
    p.add_argument("--seed", type=int, default=0, help="seed of the query splits")
    p.add_argument("--top-k", type=int, default=20, help="bm25s depth for SciFact and Vaswani")
    for name, n in DEFAULT_HELDOUT.items():
        p.add_argument(f"--heldout-{name}", type=int, default=n, help=f"held-out {name} queries")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        sources = load_sources(Path(args.shared), Path(args.noveleval), args.top_k)
        heldout = {name: getattr(args, f"heldout_{name}") for name in DEFAULT_HELDOUT}
        record = build_pool(sources, args.out, seed=args.seed, heldout=heldout)
    except (PresdepError, OSError) as e:
        logging.getLogger("prepare_pool").error("%s", e)
        return 2
    logging.getLogger("prepare_pool").info("pool: %s", record["counts"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
