"""Make the silver labels of a training config: ``python scripts/train/make_silver.py CONFIG``.

The teacher (``silver.teacher``, any registered reranker) scores every query of
``silver.data`` under T = ``silver.num_orders`` seeded presentations; the file goes to
``silver.path`` (format: docs/TRAINING.md). Resumable; an existing file made the same way is
kept (``--force`` remakes it). The four configs in configs/self-distill/ share one silver file.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from presentation_dependence.errors import ConfigError, PresdepError
from presentation_dependence.training.config import load_training_config
from presentation_dependence.training.silver import generate_silver


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("config", help="configs/self-distill/<variant>.yaml")
    p.add_argument("--override", "-o", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--force", action="store_true", help="remake an existing silver file")
    p.add_argument(
        "--shard",
        default=None,
        metavar="K/N",
        help="score only queries K mod N (parts only; a run without --shard writes the file)",
    )
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        cfg = load_training_config(args.config, args.override)
        shard = None
        if args.shard:
            k, _, n = args.shard.partition("/")
            if not (k.isdigit() and n.isdigit()):
                raise ConfigError(f"--shard must be K/N, e.g. 1/2; got {args.shard!r}")
            shard = (int(k), int(n))
        path = generate_silver(cfg.silver, argv=sys.argv, force=args.force, shard=shard)
    except PresdepError as e:
        logging.getLogger("make_silver").error("%s", e)
        return 2
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
