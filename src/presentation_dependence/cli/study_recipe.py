"""``presdep study recipe SEARCH``: train and measure recipe-search arms; render their table.

presdep study recipe configs/study/recipe-search.yaml --arm oc-sft --arm oc-sft-listnet
presdep study recipe configs/study/recipe-search.yaml --table --root docs/results/recipe-search \\
    --doc docs/studies/recipe-search.md --png docs/studies/recipe-search.png
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path

from presentation_dependence.cli.common import EXIT_OK, Subparsers, command, log, write_markdown
from presentation_dependence.errors import PresdepError

__all__ = ["register_recipe"]


def register_recipe(actions: Subparsers) -> None:
    c = command(
        actions,
        "recipe",
        _cmd_recipe,
        "recipe-search arms: train each (resumable), measure its held-out curve, tabulate",
    )
    c.add_argument("search", help="a recipe-search file, e.g. configs/study/recipe-search.yaml")
    c.add_argument(
        "--arm", action="append", default=[], help="train and measure this arm (repeatable)"
    )
    c.add_argument(
        "--archive-to",
        help="copy each finished --arm's curve points, log and provenance to DIR/<arm>/ (git)",
    )
    c.add_argument("--table", action="store_true", help="render the table of finished arms")
    c.add_argument(
        "--root", help="read the arms from here (an archive) instead of the search's output_root"
    )
    c.add_argument("--doc", help="write the table into this document's marker block")
    c.add_argument("--block", default="recipe-search", help="the marker block --doc rewrites")
    c.add_argument("--png", help="also plot the arms' learning curves here")


def _cmd_recipe(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from presentation_dependence.io.atomic import atomic_write_bytes
    from presentation_dependence.report.figures import learning_curve
    from presentation_dependence.studies.recipe import (
        archive_arm,
        load_search,
        recipe_markdown,
        recipe_rows,
        run_arm,
        series_of,
    )

    if not args.arm and not args.table:
        raise PresdepError("nothing to do: give --arm NAME (train and measure) and/or --table")
    search = load_search(args.search)
    for arm in args.arm:
        run_arm(search, arm, argv=argv)
        if args.archive_to:
            log.info("archived %s to %s", arm, archive_arm(search, arm, args.archive_to))
    if not args.table:
        return EXIT_OK
    rows = recipe_rows(search, args.root)
    text = recipe_markdown(search, rows) if rows else "No arm has finished yet.\n"
    if args.png and rows:
        Path(args.png).parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(args.png, learning_curve(series_of(search, args.root)))
        text += f"\n![Recipe-search learning curves]({_link(args.png, args.doc)})\n"
    return write_markdown(args, text)


def _link(png: str, doc: str | None) -> str:
    return os.path.relpath(png, Path(doc).parent) if doc else png
