"""``presdep study ACTION``: multi-step studies, their tables, and the reproduction study.

presdep study plan [--plan FILE [--lane L]] [--dry-run] ...   the study sequencer
    (= scripts/train/run_cpu_study.py; without --plan the built-in self-distillation plan)
presdep study table DL19_DIR [--out FILE] [--doc FILE] [--from-scores]   (= scripts/train/study_table.py)
presdep study collections ROOT [--average C ... | --population P] [--pairs A:B ...] [--out F | --doc F]
    the multi-collection table (ROOT/<collection>/<scorer>/ run folders)
presdep study archive RUN_DIR ... --to DEST     the summaries a table reads and their evidence, for git
presdep study curve CONFIG [CONFIG ...] --png FILE           (= scripts/train/learning_curve.py)
presdep study recipe SEARCH [--arm A ...] [--table [--root DIR] [--doc F] [--png F]]
    the recipe search: arms trained, their held-out curves, the table (cli/study_recipe.py)
presdep study judge [CONFIG ...] [--root DIR] [--rerun [--rerun-items N]] [--gate]
    [--archive-to DIR]   (= scripts/judge_study.py)
presdep study judge-arms [--trained DIR] [--baseline DIR] [--doc F]   trained judges' section
presdep study [--data-root DIR] task|stage|appendix ...      (= scripts/study.py; cli/reproduction.py)
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from presentation_dependence.cli import reproduction
from presentation_dependence.cli.common import (
    EXIT_OK,
    Subparsers,
    add_out,
    add_override,
    command,
    log,
    write_markdown,
)
from presentation_dependence.cli.study_judge_arms import register_judge_arms
from presentation_dependence.cli.study_recipe import register_recipe
from presentation_dependence.errors import ConfigError, PresdepError

__all__ = ["register"]

_DESCRIPTION = """\
Multi-step studies. Every step resumes or is skipped when its output exists, so rerunning the
same command continues an interrupted study.

  presdep study plan --plan configs/study/content-study.yaml --lane a   # one lane of a plan
  presdep study plan --dry-run                  # the built-in self-distillation plan's commands
  presdep study table runs/self-distill/study/dl19 --out table.md
  presdep study collections runs/study --average dl19 covid scifact --doc docs/RESULTS.md
  presdep study curve configs/study/oc-sft.yaml --png curve.png
  presdep study judge --rerun --gate            # configs/judge/study/*.yaml
  presdep study task show --task passage-reranking
  presdep study stage run --task passage-reranking --stage rerank --jobs 'dl19--*' --dry-run
  presdep study appendix audit --strict         # exit 1 when a runnable artifact is broken
"""


def register(sub: Subparsers) -> None:
    st = sub.add_parser(
        "study",
        help="multi-step studies: plan runner, tables, judge study, reproduction tasks",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    st.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        default=argparse.SUPPRESS,
        help="debug logging (as presdep -v)",
    )
    st.add_argument(
        "--data-root",
        default="data",
        help="where the reproduction tasks' data is materialised (task, stage; default data)",
    )
    actions = st.add_subparsers(
        dest="study_action", required=True, help="presdep study ACTION -h for its flags"
    )
    _register_plan(actions)
    _register_table(actions)
    _register_collections(actions)
    _register_archive(actions)
    _register_curve(actions)
    register_recipe(actions)
    _register_judge(actions)
    register_judge_arms(actions)
    reproduction.register(actions)


def _register_table(actions: Subparsers) -> None:
    t = command(actions, "table", _cmd_table, "the study's Markdown table of its scorer runs")
    t.add_argument("dl19_dir", help="folder of the scorers' run folders (run --eval, then psi)")
    add_out(t, "write the table here (else print it)")
    t.add_argument("--timings", help="the study sequencer's steps.jsonl (wall time per step)")
    t.add_argument(
        "--from-scores",
        action="store_true",
        help="recompute every figure from each folder's run.trec, qrels.txt and "
        "psi/grade_distributions.npz (no model) instead of reading metrics.json and "
        "psi/psi_metrics.json; a folder without them is refused",
    )
    t.add_argument(
        "--doc",
        help="also rewrite the <!-- BLOCK:start/end --> block of this document (docs/studies/)",
    )
    t.add_argument(
        "--block",
        default="study-table",
        help="the marker block --doc rewrites (default study-table, docs/studies/"
        "self-distillation.md; the content study's is content-study-table)",
    )


def _register_archive(actions: Subparsers) -> None:
    a = command(
        actions,
        "archive",
        _cmd_archive,
        "copy run folders' summary files (the tables' inputs) where git keeps them",
        description="Copies each run folder's summary files (resolved_config.yaml, "
        "provenance.json, metrics.json, psi/psi_metrics.json, ...) and the evidence they are "
        "computed from (run.trec, qrels.txt, psi/grade_distributions.npz: ids and numbers only; "
        "never per-query results, texts or checkpoints) into DEST/<folder name>/, and a plain "
        "file (a steps.jsonl) into DEST, so that 'study table' renders again, and "
        "'study table --from-scores' recomputes, from a clean clone.",
    )
    a.add_argument("sources", nargs="+", help="finished run folders (or files) to archive")
    a.add_argument("--to", required=True, help="e.g. docs/results/content-study/dl19")


def _register_curve(actions: Subparsers) -> None:
    c = command(
        actions, "curve", _cmd_curve, "learning curves of trained students on held-out queries"
    )
    c.add_argument("configs", nargs="+", help="training configs of trained students")
    add_override(c, "splits.heldout=data/pool/heldout.jsonl")
    c.add_argument("--png", help="write the plot here")
    c.add_argument("--presentations", type=int, default=4, help="M shuffles per held-out query")
    c.add_argument(
        "--max-queries",
        type=int,
        default=40,
        help="held-out queries used (each source's share proportional to its size)",
    )
    c.add_argument("--seed", type=int, default=0, help="seed of the shuffles")
    which = c.add_mutually_exclusive_group()
    which.add_argument(
        "--every",
        type=int,
        default=1,
        help="use the checkpoints whose step is a multiple of this (default: every one; the "
        "base model and the final adapter always)",
    )
    which.add_argument(
        "--steps",
        help="use the checkpoints at these steps, comma-separated, e.g. 100,200,400 (the base "
        "model and the final adapter always)",
    )
    c.add_argument("--doc", help="also write the points as a table into a document's marker block")
    c.add_argument("--block", default="learning-curve", help="the marker block --doc rewrites")
    c.add_argument(
        "--paired-against",
        metavar="ID",
        help="also compare each student's last point with this student's, paired over the "
        "held-out queries (bootstrap CI); points cached without per-query scores are remeasured",
    )


def _register_judge(actions: Subparsers) -> None:
    j = command(actions, "judge", _cmd_judge, "a judge study: each config into <root>/<id>/")
    j.add_argument("configs", nargs="*", help="judge configs (default: configs/judge/study/*.yaml)")
    j.add_argument("--root", default="runs/judge/study", help="where the study writes")
    j.add_argument("--rerun", action="store_true", help="add the rerun-noise run")
    j.add_argument("--gate", action="store_true", help="add the gate verdict")
    j.add_argument(
        "--rerun-items",
        type=int,
        metavar="N",
        help="with --rerun: rerun only the calls of the sweep's first N items",
    )
    j.add_argument(
        "--archive-to",
        metavar="DIR",
        help="copy each finished config's summaries into DIR/<id>/ (as 'study archive'), by the "
        "process that finishes it (e.g. docs/results/judge-study/runs)",
    )
    add_override(j, "judge.batch_size=4")


def _register_collections(actions: Subparsers) -> None:
    c = command(
        actions,
        "collections",
        _cmd_collections,
        "the multi-collection table: per metric, the scorers on each collection and the average",
        description="Reads ROOT/<collection>/<scorer>/ run folders (or archived summaries) and "
        "writes one table per metric (mean [95% CI] per collection and the average over "
        "collections, CI stratified by collection), the paired tests per collection and "
        "pooled, the verdict on the first pair and the cost per scorer.",
    )
    c.add_argument("root", help="folder of collection folders of scorer run folders")
    c.add_argument(
        "--average",
        nargs="+",
        metavar="COLLECTION",
        help="the collections the average is over (default: --population's collection axis, "
        "else all; leave out a separate axis, e.g. DL19's alternative first stages)",
    )
    c.add_argument(
        "--population",
        help="a population (configs/reproduction/populations/<name>.yaml): the average is over "
        "its collection axis (e.g. zero-shot-shared)",
    )
    c.add_argument(
        "--pairs",
        nargs="+",
        metavar="A:B",
        help="scorer pairs tested as A − B; the first is the verdict's (default: "
        "oc-sft:off-the-shelf oc-sft:order-averaged)",
    )
    c.add_argument("--seed", type=int, default=0, help="seed of the bootstraps and permutations")
    add_out(c, "write the Markdown here (else print it)")
    c.add_argument("--doc", help="also rewrite the <!-- BLOCK:start/end --> block of this document")
    c.add_argument("--block", default="collections-table", help="the marker block --doc rewrites")


def _register_plan(actions: Subparsers) -> None:
    p = command(
        actions,
        "plan",
        _cmd_plan,
        "run a study plan's steps in order (resumable); default the self-distillation plan",
        description="Runs a plan's commands in order; a step whose 'done' file exists is "
        "skipped and every command resumes. Without --plan: the CPU-scale self-distillation "
        "study (docs/studies/self-distillation.md): fixtures, silver labels, λ selection, three students, then "
        "the off-the-shelf readout, BSC and the four students on DL19 (run + PSI) and the table.",
    )
    p.add_argument("--root", default="runs/self-distill/study", help="where the study writes")
    p.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    p.add_argument(
        "--plan",
        default="",
        help="a study plan YAML (e.g. configs/study/content-study.yaml) instead of the built-in "
        "self-distillation plan",
    )
    p.add_argument("--lane", default="", help="run only the plan's steps of this lane")
    p.add_argument(
        "--stop-after",
        default="",
        metavar="STEP",
        help="stop after this step (its name in the plan), e.g. to hand the cores to another plan",
    )
    p.add_argument(
        "--timings",
        default="",
        help="append one JSON line per finished step (name, lane, seconds, UTC end) to this file "
        "(default with --plan: runs/<plan stem>/steps.jsonl); the study table's cost column",
    )
    p.add_argument(
        "--launcher",
        default="",
        help="prefix of the training commands, e.g. 'accelerate launch' (default: python)",
    )
    p.add_argument(
        "--eval-override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra --override for every DL19 run (e.g. data.max_queries=8)",
    )
    p.add_argument(
        "--reuse",
        action="append",
        default=[],
        metavar="SCORER=RUN_DIR",
        help="copy a finished run folder of the same experiment config instead of recomputing "
        "it, e.g. bsc=runs/psi-dl19-smollm2-bsc/<timestamp> (its run and psi steps are then "
        "skipped; presdep refuses a folder made from another config)",
    )


def _cmd_plan(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from presentation_dependence.studies.sequencer import StudyRun, run_study

    opts = StudyRun(
        root=args.root,
        plan=args.plan,
        lane=args.lane,
        stop_after=args.stop_after,
        timings=args.timings,
        launcher=args.launcher,
        eval_overrides=tuple(args.eval_override),
        reuse=tuple(args.reuse),
        dry_run=args.dry_run,
    )
    return run_study(opts)


def _cmd_table(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from presentation_dependence.studies.sequencer import study_run_dirs
    from presentation_dependence.studies.table import study_table

    table = study_table(study_run_dirs(args.dl19_dir), args.timings, from_scores=args.from_scores)
    return write_markdown(args, table)


def _cmd_collections(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from presentation_dependence.studies.collections_figures import DEFAULT_PAIRS, parse_pair
    from presentation_dependence.studies.collections_table import collections_table

    pairs = DEFAULT_PAIRS if args.pairs is None else tuple(parse_pair(p) for p in args.pairs)
    average = args.average
    if average is None and args.population:
        from presentation_dependence.reproduction.populations import load_population

        average = [c.id for c in load_population(args.population).on_axis("collection")]
    text = collections_table(args.root, average, pairs, seed=args.seed)
    return write_markdown(args, text)


def _cmd_archive(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from presentation_dependence.studies.archive import archive_summaries

    for path in archive_summaries(args.sources, args.to):
        sys.stdout.write(f"{path}\n")
    return EXIT_OK


def _cmd_curve(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from presentation_dependence.io.atomic import atomic_write_bytes
    from presentation_dependence.report.figures import learning_curve
    from presentation_dependence.report.markers import splice_file
    from presentation_dependence.studies.curve import curve_doc, curve_series

    if args.every < 1:
        raise PresdepError(f"--every {args.every}: give a positive number of steps, e.g. 100")
    try:
        steps = None if args.steps is None else [int(x) for x in args.steps.split(",")]
    except ValueError:
        raise PresdepError(f"--steps {args.steps!r}: give step numbers, e.g. 100,200,400") from None
    series = curve_series(
        args.configs,
        args.override,
        num_presentations=args.presentations,
        seed=args.seed,
        max_queries=args.max_queries,
        every=args.every,
        steps=steps,
        per_query=args.paired_against is not None,
    )
    if args.paired_against is not None and args.paired_against not in series:
        raise PresdepError(
            f"--paired-against {args.paired_against}: not one of the students ({', '.join(series)})"
        )
    if args.png:
        Path(args.png).parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(args.png, learning_curve(series))
        log.info("wrote %s", args.png)
    if args.doc:
        link = os.path.relpath(args.png, Path(args.doc).parent) if args.png else None
        text = curve_doc(series, paired_against=args.paired_against, seed=args.seed, figure=link)
        splice_file(args.doc, args.block, text)
        log.info("wrote the %s block of %s", args.block, args.doc)
    return EXIT_OK


def _cmd_judge(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from presentation_dependence.studies.judge_run import run_judge_study

    if args.rerun_items is not None and (not args.rerun or args.rerun_items < 1):
        raise ConfigError(f"--rerun-items {args.rerun_items}: expected N >= 1 with --rerun")
    folders = run_judge_study(
        args.configs,
        args.root,
        overrides=args.override,
        argv=argv,
        rerun=args.rerun,
        gate=args.gate,
        rerun_items=args.rerun_items,
        archive_to=args.archive_to,
    )
    log.info("%d judge runs under %s", len(folders), args.root)
    return EXIT_OK
