"""Train one student: ``python scripts/train/train_student.py CONFIG [--override KEY=VALUE]``.

A shim of ``presdep train`` (the same flags: ``presdep train -h``). Multi-GPU data parallelism
needs no code change::

    accelerate launch --multi_gpu --num_processes 4 scripts/train/train_student.py CONFIG

Writes ``<output_dir>/adapter/``, ``resolved_config.yaml``, ``reranker.yaml`` and
``provenance.json`` (docs/TRAINING.md). ``--lambda-from lambda_selection.json`` sets λ to the
one ``select_lambda.py`` chose.

Stopping is safe: checkpoints go to ``<output_dir>/checkpoints/`` every ``train.save_steps``
steps and rerunning the same command resumes from the latest complete one; on a finished
``output_dir`` it does nothing. ``--restart`` discards the checkpoints (and a finished student)
and trains from scratch; without it, checkpoints or a student of another config are refused.
"""

from __future__ import annotations

import sys

from presentation_dependence.cli import run_script

main = run_script("train")

if __name__ == "__main__":
    sys.exit(main())
