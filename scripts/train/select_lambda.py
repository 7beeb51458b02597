"""Select OC-SFT's λ on held-out queries: ``python scripts/train/select_lambda.py CONFIG --out DIR``.

Trains one student per λ of ``selection.lambdas`` (reusing finished ones), scores each on
``splits.heldout`` in the given order and under M seeded shuffles, and writes
``DIR/lambda_selection.json`` (the curve and the choice) and ``DIR/lambda_curve.md``. Refuses a
held-out split that shares a query (same qid or text) with ``splits.test`` or with the training
queries (docs/EVAL-PROTOCOL.md, "λ selection").
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from presentation_dependence.errors import PresdepError
from presentation_dependence.training.config import load_training_config


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("config", help="an oc_sft training config (configs/self-distill/oc-sft.yaml)")
    p.add_argument("--override", "-o", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--out", required=True, help="folder of the λ students and the curve")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        cfg = load_training_config(args.config, args.override)
        from presentation_dependence.training.lambda_select import run_lambda_selection

        result = run_lambda_selection(cfg, out_dir=args.out, argv=sys.argv)
    except PresdepError as e:
        logging.getLogger("select_lambda").error("%s", e)
        return 2
    print(f"chosen lambda: {result['chosen_lambda']:g} ({result['criterion']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
