"""What every ``presdep`` subcommand shares: exit codes, logging, and the repeated option blocks.

Each group module (``runs``, ``evaluation``, ``project``, ``judge``, ``training``, ``study``)
registers its subcommands with :func:`command` and builds their flags from the ``add_*`` blocks
here, so a flag that several commands take (``--override``, ``--run-dir``, ``--shard``, ...) is
written once and reads the same everywhere.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from presentation_dependence.secrets import RedactingFormatter

__all__ = [
    "EXIT_BROKEN_PIPE",
    "EXIT_GATE_FAIL",
    "EXIT_INTERNAL_ERROR",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_USER_ERROR",
    "OVERRIDE_HELP",
    "Handler",
    "ScriptMain",
    "add_config",
    "add_out",
    "add_override",
    "add_recompute_changed",
    "add_run_dir",
    "add_shard",
    "command",
    "log",
    "run_script",
    "setup_logging",
    "write_markdown",
]

# One logger for every subcommand: its name prefixes each message a user sees.
log = logging.getLogger("presentation_dependence.cli")

EXIT_OK = 0
EXIT_GATE_FAIL = (
    1  # a check that fails: ``presdep gate`` (beyond noise), ``student verify --against-archive``
)
EXIT_USER_ERROR = 2
EXIT_INTERNAL_ERROR = 3
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141  # as a process killed by SIGPIPE (128 + 13)

OVERRIDE_HELP = (
    "dotted override, value parsed as YAML (repeatable; a number indexes a list block, "
    "silver.data.0.top_k=5), e.g. robustness.seed=3"
)

# A subcommand's function: (parsed arguments, the full command line for provenance) -> exit code.
Handler = Callable[[argparse.Namespace, Sequence[str]], int]

if TYPE_CHECKING:  # both are generic for type checkers only
    _StreamHandler = logging.StreamHandler[Any]
    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]
else:
    _StreamHandler = logging.StreamHandler
    Subparsers = argparse._SubParsersAction


class _StderrHandler(_StreamHandler):
    """Writes to whatever ``sys.stderr`` is at the time of each record (not at setup)."""

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass


def setup_logging(verbose: bool = False) -> None:
    """INFO (DEBUG with ``verbose``) of the package's loggers to stderr, redacted; idempotent."""
    root = logging.getLogger("presentation_dependence")
    if any(getattr(h, "_presdep", False) for h in root.handlers):
        root.setLevel(logging.DEBUG if verbose else logging.INFO)
        return
    handler = _StderrHandler()
    handler.setFormatter(RedactingFormatter("%(levelname)s %(name)s: %(message)s"))
    handler._presdep = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if verbose else logging.INFO)


def command(
    sub: Subparsers, name: str, handler: Handler, help: str, **kwargs: Any
) -> argparse.ArgumentParser:
    """Add subcommand ``name`` whose parsed arguments go to ``handler``."""
    p = sub.add_parser(name, help=help, **kwargs)
    p.set_defaults(handler=handler)
    return p


def add_config(
    p: argparse.ArgumentParser, help: str, *, override_example: str = "", optional: bool = False
) -> None:
    """The positional CONFIG (``optional``: may be left out) and, with it, ``--override``."""
    p.add_argument("config", nargs="?" if optional else None, help=help)
    add_override(p, override_example)


def add_override(p: argparse.ArgumentParser, example: str = "") -> None:
    p.add_argument(
        "--override",
        "-o",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=OVERRIDE_HELP if not example else OVERRIDE_HELP.replace("robustness.seed=3", example),
    )


def add_run_dir(p: argparse.ArgumentParser, *, required: bool = True, help: str = "") -> None:
    p.add_argument(
        "--run-dir", required=required, help=help or "run folder (shared with 'presdep run')"
    )


def add_shard(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument(
        "--shard",
        metavar="K/N",
        help=f"{what} only the queries i with i %% N == K (0-based), so N processes share one job",
    )


def add_recompute_changed(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--recompute-changed",
        action="store_true",
        help="recompute finished queries whose input (query/passage texts, judgements) changed "
        "since they were written, instead of refusing the run folder",
    )


def add_out(p: argparse.ArgumentParser, help: str, *, required: bool = False) -> None:
    p.add_argument("--out", required=required, help=help)


class ScriptMain(Protocol):
    """``main(argv=None) -> exit code`` of a script."""

    def __call__(self, argv: Sequence[str] | None = None) -> int: ...


def run_script(*command_words: str) -> ScriptMain:
    """The ``main`` of a script kept as a shim of ``presdep COMMAND``: the same parser, the same
    package function; ``main(argv)`` runs ``presdep COMMAND *argv`` (``sys.argv[1:]`` by default)."""

    def main(argv: Sequence[str] | None = None) -> int:
        from presentation_dependence.cli import main as presdep

        return presdep([*command_words, *(sys.argv[1:] if argv is None else argv)])

    return main


def write_markdown(args: argparse.Namespace, text: str) -> int:
    """``text`` to ``--out`` (when the command has it), into ``--doc``'s ``--block``, or
    (neither given) to stdout; the exit code."""
    from presentation_dependence.io.atomic import atomic_write_text
    from presentation_dependence.report.markers import splice_file

    out = getattr(args, "out", None)
    if out:
        atomic_write_text(out, text)
        log.info("wrote %s", out)
    if args.doc:
        splice_file(args.doc, args.block, text)
        log.info("wrote the %s block of %s", args.block, args.doc)
    if not out and not args.doc:
        sys.stdout.write(text)
    return EXIT_OK
