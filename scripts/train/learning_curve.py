"""Learning curves of trained students on held-out queries (training/curve.py), as JSON and a plot.

    uv run python scripts/train/learning_curve.py configs/study/oc-sft.yaml configs/study/single-order.yaml \
        --png docs/results/content-study/learning-curve.png
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from presentation_dependence.errors import PresdepError
from presentation_dependence.io.atomic import atomic_write_bytes
from presentation_dependence.report.figures import learning_curve
from presentation_dependence.training.config import load_training_config
from presentation_dependence.training.curve import learning_curve_points


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("configs", nargs="+", help="training configs of trained students")
    p.add_argument("--png", help="write the plot here")
    p.add_argument("--presentations", type=int, default=4, help="M shuffles per held-out query")
    p.add_argument("--max-queries", type=int, default=40, help="held-out queries used")
    p.add_argument("--seed", type=int, default=0, help="seed of the shuffles")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    try:
        series = {}
        for path in args.configs:
            cfg = load_training_config(path)
            series[cfg.id] = learning_curve_points(
                cfg,
                num_presentations=args.presentations,
                seed=args.seed,
                max_queries=args.max_queries,
            )
        if args.png:
            Path(args.png).parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(args.png, learning_curve(series))
    except (PresdepError, OSError) as e:
        logging.getLogger("learning_curve").error("%s", e)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
