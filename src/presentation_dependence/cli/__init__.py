"""The ``presdep`` console command. Every subcommand parses, calls the package, returns an exit code.

presdep run | rerank | psi | psi-diff | psi-runs | qa   rerank, order instability  (cli/runs.py)
presdep bm25                         the BM25 first stage over a BEIR folder  (cli/firststage.py)
presdep eval | compare | report       effectiveness, two runs paired, the order-instability report  (cli/evaluation.py)
presdep configs | init | schema       the configs  (cli/project.py)
presdep judge | noise | gate          LLM-as-judge placement, rerun noise, the gate  (cli/judge.py)
presdep silver | train | select-lambda   silver labels and students  (cli/training.py)
presdep judge-splits | train-judge    trained verdict readout judges  (cli/judge_training.py)
presdep study plan | table | curve | judge | task | stage | appendix   studies  (cli/study.py)

``presdep COMMAND -h`` lists a command's flags. The scripts under ``scripts/`` that do the same
(``scripts/report.py``, ``scripts/train/*.py``, ``scripts/study.py``, ...) are shims of these
subcommands: the same flags, the same package function (:func:`~.common.run_script`).

Exit codes (every command): 0 done; 1 only ``presdep gate``'s "fail beyond noise" (and
``study appendix audit --strict``'s broken artifact); 2 bad input (config, data, paths: the
message names the problem and the fix), an environment error (a read-only or full disk, a file
too large, a file where a folder is meant) or a truncated or corrupt file, each named with its
path (:mod:`.failures`); 3 an internal error (a bug: one line, the traceback with
``--debug``); 130 interrupted; 141 stdout closed early (``presdep configs | head``); ``study plan`` and ``study stage run`` pass on the exit status of
a failing step. Every message and traceback is redacted (:mod:`presentation_dependence.secrets`).
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Sequence

from presentation_dependence.cli import (
    evaluation,
    firststage,
    judge,
    judge_training,
    project,
    runs,
    students,
    study,
    training,
)
from presentation_dependence.cli.common import (
    EXIT_BROKEN_PIPE,
    EXIT_GATE_FAIL,
    EXIT_INTERNAL_ERROR,
    EXIT_INTERRUPTED,
    EXIT_USER_ERROR,
    log,
    run_script,
    setup_logging,
)
from presentation_dependence.cli.failures import environment_problem
from presentation_dependence.errors import PresdepError
from presentation_dependence.secrets import redact

__all__ = [
    "EXIT_GATE_FAIL",
    "EXIT_INTERNAL_ERROR",
    "EXIT_INTERRUPTED",
    "EXIT_USER_ERROR",
    "main",
    "make_parser",
    "run_script",
    "setup_logging",
]

# The groups of subcommands, in the order ``presdep -h`` lists them.
GROUPS = (runs, firststage, evaluation, project, judge, training, judge_training, students, study)


def make_parser() -> argparse.ArgumentParser:
    from presentation_dependence import __version__

    p = argparse.ArgumentParser(prog="presdep", description=__doc__.split("\n")[0])
    p.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    p.add_argument(
        "--debug", action="store_true", help="debug logging, and a traceback on internal errors"
    )
    p.add_argument("--version", action="version", version=f"presdep {__version__}")
    sub = p.add_subparsers(
        dest="command", required=True, help="the subcommand; presdep COMMAND -h for its flags"
    )
    for group in GROUPS:
        group.register(sub)
    p.set_defaults(presdep_commands=frozenset(sub.choices))  # for the appendix audit
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; the one place that turns exceptions into exit codes (module docstring)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = make_parser().parse_args(argv)  # argparse itself exits 2 on bad arguments
    setup_logging(args.verbose or args.debug)
    try:
        code: int = args.handler(args, ["presdep", *argv])
        return code
    except PresdepError as e:
        log.error("%s", e)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        log.error("interrupted; rerun the same command to resume where it stopped")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader of stdout went away (`presdep configs | head`): not an error of ours.
        # Point stdout at /dev/null so the interpreter's final flush stays quiet, and exit as
        # a process killed by SIGPIPE does.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except Exception as e:
        problem = environment_problem(e)
        if problem is not None:
            log.error("%s", problem)
            if args.debug:
                sys.stderr.write(redact(traceback.format_exc()))
            return EXIT_USER_ERROR
        log.error(
            "internal error: %s: %s (a bug, not your input; rerun with --debug for the "
            "traceback and report it)",
            type(e).__name__,
            e,
        )
        if args.debug:
            sys.stderr.write(redact(traceback.format_exc()))
        return EXIT_INTERNAL_ERROR
