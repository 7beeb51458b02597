"""Who may write a training folder: one training process at a time, and never another command.

:func:`refuse_foreign_folder` refuses an ``output_dir`` that is another command's run folder: a
``presdep run`` folder (it has ``per_query_results/``) or one whose ``resolved_config.yaml`` is
not a training config (an experiment's, a judge task's). Training there would replace that
folder's config and provenance, and ``--restart`` would delete them, so the refusal asks for
another ``output_dir`` and never suggests ``--restart``.

:func:`claim_training` holds the folder's ``train`` claim
(:meth:`~presentation_dependence.runners.run_folder.RunFolder.claim`) for a whole training:
a second process on the same folder refuses at once, naming the folder and the holder, or with
``wait`` waits until the first lets go and then finds its student (or its checkpoints). The
operating system ends the claim with its process, however it ends.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path

import yaml

from presentation_dependence.errors import ConfigError, PresdepError
from presentation_dependence.runners.run_folder import PER_QUERY, RESOLVED_CONFIG, RunFolder

__all__ = ["TRAIN_CLAIM", "claim_training", "refuse_foreign_folder"]

log = logging.getLogger(__name__)

TRAIN_CLAIM = "train"
_TRAINING_KEYS = ("variant", "student", "silver")  # what every frozen training config holds
_JUDGE_TRAINING_KEYS = ("variant", "judge", "splits")  # ... and every judge training config
_REWARD_MODEL_KEYS = ("model_name", "splits", "max_length", "lora")  # ... and a reward model's


def _foreign(out: Path) -> str | None:
    """Why ``out`` is another command's run folder (None: it is not)."""
    folder = RunFolder(out)
    if folder.per_query_dir.is_dir():
        return f"it has {PER_QUERY}/, the per-query results of 'presdep run'"
    if not folder.resolved_config.is_file():
        return None
    try:
        raw = yaml.safe_load(folder.resolved_config.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        return f"its {RESOLVED_CONFIG} is unreadable ({type(e).__name__})"
    if isinstance(raw, dict) and any(
        all(k in raw for k in keys)
        for keys in (_TRAINING_KEYS, _JUDGE_TRAINING_KEYS, _REWARD_MODEL_KEYS)
    ):
        return None
    keys = ", ".join(sorted(raw)[:4]) if isinstance(raw, dict) else type(raw).__name__
    return f"its {RESOLVED_CONFIG} is another command's config ({keys}), not a training config"


def refuse_foreign_folder(out: Path) -> None:
    """Refuse a training ``output_dir`` that is another command's run folder."""
    why = _foreign(out)
    if why is not None:
        raise ConfigError(
            f"{out} is the run folder of another command ({why}); training there would "
            "replace its files. Fix: choose another output_dir (--override "
            "output_dir=runs/students/NAME); keep this folder as it is"
        )


@contextlib.contextmanager
def claim_training(out: Path, *, wait: bool = False) -> Iterator[None]:
    """Hold ``out``'s ``train`` claim for the block; another process's claim is refused with
    its holder named, or (``wait``) waited for."""
    folder = RunFolder(out)
    with folder.claim(TRAIN_CLAIM) as held:
        if held:
            yield
            return
    holder = folder.claim_holder(TRAIN_CLAIM)
    if not wait:
        raise PresdepError(
            f"{out} is being trained by {holder}: two processes must not train one folder. "
            "Fix: let that one finish and rerun (a finished folder is kept, checkpoints are "
            "resumed), rerun with --wait to wait for it, or choose another output_dir"
        )
    log.info("%s is being trained by %s: waiting for it to finish", out, holder)
    with folder.claim(TRAIN_CLAIM, wait=True):
        yield
