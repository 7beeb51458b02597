"""``presdep configs | init | schema``: the experiment configs and the config schema.

presdep configs [--root configs/experiments]
presdep init DIR [--force]   (the shipped configs/ and fixtures/, for an installed wheel)
presdep schema [FAMILY|all] [--write PATH]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from presentation_dependence.cli.common import EXIT_OK, EXIT_USER_ERROR, Subparsers, command, log
from presentation_dependence.errors import PresdepError
from presentation_dependence.registry import did_you_mean

__all__ = ["register"]


def register(sub: Subparsers) -> None:
    c = command(
        sub, "configs", _cmd_configs, "list the experiment configs and whether each runs here"
    )
    c.add_argument("--why", action="store_true", help="say what stops each config that cannot")
    c.add_argument(
        "--root",
        help="folder of the configs (default: ./configs/experiments, else the installed ones)",
    )

    it = command(sub, "init", _cmd_init, "write the shipped configs/ and fixtures/ into a folder")
    it.add_argument("dir", help="target folder (then run the main job from there)")
    it.add_argument("--force", action="store_true", help="overwrite configs/ and fixtures/ there")

    s = command(sub, "schema", _cmd_schema, "print (or write) a config family's schema")
    s.add_argument(
        "family",
        nargs="?",
        default="experiment",
        help="experiment (default), training, judge, population, task, plan, appendix, checks, "
        "reader or probes; 'all' writes every family's page where it lives (--write not taken)",
    )
    s.add_argument("--write", metavar="PATH", help="write to PATH instead of printing")


def _cmd_configs(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from presentation_dependence.config import list_experiment_configs
    from presentation_dependence.config.readiness import config_readiness
    from presentation_dependence.resources import shipped_configs_dir

    root = args.root
    if root is None:
        local = Path("configs/experiments")
        root = local if local.is_dir() else shipped_configs_dir()
        if root != local:
            log.info("no ./configs/experiments: listing the installed configs (presdep init DIR)")
    rows = list_experiment_configs(root)
    if not rows:
        log.error("no configs under %s", root)
        return EXIT_USER_ERROR
    width = max(len(i) for i, _ in rows)
    sys.stdout.write(f"{'config'.ljust(width)}  runs here  description\n")
    for i, d in rows:
        ready = config_readiness(Path(root) / f"{i}.yaml")
        sys.stdout.write(f"{i.ljust(width)}  {ready.mark.ljust(9)}  {d}\n")
        if args.why:
            for what in ready.missing:
                sys.stdout.write(f"{''.ljust(width)}    missing: {what}\n")
            for what in ready.network:
                sys.stdout.write(f"{''.ljust(width)}    downloads: {what}\n")
    sys.stdout.write(
        "\nruns here: yes (its data, model and extras are here), network (it downloads a "
        "model or dataset on first use), no (--why says what is missing). Paths are relative "
        "to this folder.\n"
    )
    return EXIT_OK


def _cmd_init(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from presentation_dependence.resources import init_project

    for path in init_project(args.dir, force=args.force):
        log.info("wrote %s", path)
    log.info(
        "next: cd %s && presdep run configs/experiments/example-noveleval-smollm2.yaml --eval",
        args.dir,
    )
    return EXIT_OK


def _cmd_schema(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from presentation_dependence.cli.schema_families import FAMILIES, family_markdown
    from presentation_dependence.io.atomic import atomic_write_text

    if args.family == "all":
        if args.write:
            raise PresdepError("schema all writes each family's own page; drop --write")
        for fam in FAMILIES.values():
            Path(fam.page).parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(fam.page, family_markdown(fam.name))
            log.info("wrote %s", fam.page)
        return EXIT_OK
    if args.family not in FAMILIES:
        raise PresdepError(
            f"schema {args.family!r}: no such config family (one of {', '.join(FAMILIES)} or "
            f"all).{did_you_mean(args.family, list(FAMILIES))}"
        )
    text = family_markdown(args.family)
    if args.write:
        atomic_write_text(args.write, text)
        log.info("wrote %s", args.write)
    else:
        sys.stdout.write(text)
    return EXIT_OK
