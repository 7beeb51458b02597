"""Select OC-SFT's λ on held-out queries: ``python scripts/train/select_lambda.py CONFIG --out DIR``.

A shim of ``presdep select-lambda`` (the same flags). Trains one student per λ of
``selection.lambdas`` (reusing finished ones), scores each on ``splits.heldout`` in the given
order and under M seeded shuffles, and writes ``DIR/lambda_selection.json`` (the curve and the
choice) and ``DIR/lambda_curve.md``. Refuses a held-out split that shares a query (same qid or
text) with ``splits.test`` or with the training queries (docs/EVAL-PROTOCOL.md, "λ selection").
"""

from __future__ import annotations

import sys

from presentation_dependence.cli import run_script

main = run_script("select-lambda")

if __name__ == "__main__":
    sys.exit(main())
