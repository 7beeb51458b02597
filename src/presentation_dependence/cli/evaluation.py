"""``presdep eval | compare | report``: effectiveness of a run, two runs paired, the
order-instability report.

presdep eval --run-dir DIR [--qrels PATH]
presdep eval RUN QRELS [-m MEASURE ...] [-l LEVEL] [-q] [--json PATH]   (any TREC run file)
presdep compare RUN_A RUN_B QRELS [-m MEASURE ...] [-l LEVEL] [--seed N] [--json PATH]
presdep report RUN_DIR [RUN_DIR ...] --out DIR [--seed N] [--label L ...]   (= scripts/report.py)
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from presentation_dependence.cli.common import (
    EXIT_OK,
    Subparsers,
    add_out,
    add_run_dir,
    command,
    log,
)
from presentation_dependence.errors import PresdepError

__all__ = ["register"]


def register(sub: Subparsers) -> None:
    e = command(
        sub,
        "eval",
        _cmd_eval,
        "evaluate a run folder (-> metrics.json) or any TREC run file: eval RUN QRELS -m ...",
        description="Either --run-dir DIR (the run folder's eval block -> DIR/metrics.json) or, "
        "trec_eval style, RUN QRELS [-m MEASURE ...] (printed; --json PATH to keep them).",
    )
    e.add_argument("run", nargs="?", help="a TREC run file 'qid Q0 docid rank score tag'")
    e.add_argument("qrels_file", nargs="?", metavar="qrels", help="a TREC qrels file")
    add_run_dir(e, required=False, help="a run folder of 'presdep run' (instead of RUN QRELS)")
    e.add_argument("--qrels", help="with --run-dir: qrels file (default: the folder's qrels.txt)")
    _add_measures(e, "with RUN QRELS")
    e.add_argument(
        "--judged-k",
        type=int,
        default=10,
        help="with RUN QRELS: also report Judged@k (0 = off; default 10)",
    )
    e.add_argument("-q", "--per-query", action="store_true", help="also print per-query values")
    e.add_argument("--json", metavar="PATH", help="with RUN QRELS: also write the metrics as JSON")

    c = command(
        sub,
        "compare",
        _cmd_compare,
        "paired comparison of two TREC runs: bootstrap CI and permutation test per measure",
        description="Run B against the baseline A over the queries both have and the qrels "
        "judge: per measure the means, B − A with its seeded paired bootstrap 95%% CI and p, and "
        "the paired permutation test's p (as pt.Experiment(baseline=...) and ranx.compare).",
    )
    c.add_argument("run_a", metavar="RUN_A", help="the baseline's TREC run file")
    c.add_argument("run_b", metavar="RUN_B", help="the TREC run file compared with it")
    c.add_argument("qrels_file", metavar="QRELS", help="a TREC qrels file")
    _add_measures(c, "")
    c.add_argument("--seed", type=int, default=0, help="seed of the bootstrap and permutations")
    c.add_argument("--json", metavar="PATH", help="also write the comparison as JSON")

    rp = command(
        sub,
        "report",
        _cmd_report,
        "order-instability report of PSI run folders -> report.md, report.html, PNGs",
        description="Markdown and a self-contained HTML page (plots embedded) of the PSI run "
        "folders; the first folder is the baseline of the paired tests.",
    )
    rp.add_argument("run_dirs", nargs="+", help="run folders with psi/psi_metrics.json")
    add_out(rp, "output folder", required=True)
    rp.add_argument("--seed", type=int, default=0, help="seed of the paired tests")
    rp.add_argument(
        "--label",
        action="append",
        default=[],
        metavar="LABEL",
        help="repeatable, one per run folder in order: its name in the report (default: the "
        "folder's name; two folders with one label are refused)",
    )


def _add_measures(p: argparse.ArgumentParser, when: str) -> None:
    """``-m MEASURE`` (repeatable) and ``-l LEVEL``, as trec_eval takes them."""
    lead = f"{when}: " if when else ""
    p.add_argument(
        "-m",
        "--measure",
        action="append",
        default=[],
        metavar="MEASURE",
        help=f"{lead}repeatable: ir_measures names (nDCG@10, RR@10, AP, Judged@10, "
        "P(rel=2)@10) or trec_eval names (ndcg_cut_10, recip_rank); default ndcg@10 map mrr",
    )
    p.add_argument(
        "-l",
        "--relevance-level",
        type=int,
        default=1,
        help=f"{lead}minimum grade counted relevant by binary measures (TREC DL: 2)",
    )


def _files(command_name: str, *paths: str) -> None:
    for path in paths:
        if not Path(path).is_file():
            raise PresdepError(f"presdep {command_name}: {path} is not a file")


def _cmd_eval(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from presentation_dependence.runners import EvalManager

    if args.run_dir is not None:
        if args.run or args.measure or args.json:
            raise PresdepError(
                "presdep eval: give either --run-dir DIR (its config's eval block) or "
                "RUN QRELS [-m MEASURE ...], not both"
            )
        EvalManager(args.run_dir, qrels_path=args.qrels, argv=argv).evaluate()
        return EXIT_OK
    return _eval_files(args)


def _eval_files(args: argparse.Namespace) -> int:
    import json

    from presentation_dependence.config import EvalConfig
    from presentation_dependence.io.atomic import atomic_write_text
    from presentation_dependence.runners.evaluation import evaluate_files, format_trec_eval

    if not args.run or not args.qrels_file:
        raise PresdepError(
            "presdep eval: give RUN QRELS (a TREC run file and a qrels file), e.g. "
            "'presdep eval run.trec qrels.txt -m nDCG@10 -m RR@10', or --run-dir DIR"
        )
    _files("eval", args.run, args.qrels_file)
    cfg = EvalConfig(
        measures=list(args.measure) or EvalConfig().measures,
        relevance_level=args.relevance_level,
        judged_k=args.judged_k or None,
    )
    metrics = evaluate_files(args.run, args.qrels_file, cfg)
    sys.stdout.write(format_trec_eval(metrics, per_query=args.per_query))
    if args.json:
        atomic_write_text(args.json, json.dumps(metrics, indent=1, allow_nan=False) + "\n")
        log.info("wrote %s", args.json)
    if metrics["unjudged_queries"]:
        log.warning(
            "%d queries of the run have no judgements and are not averaged: %s",
            len(metrics["unjudged_queries"]),
            ", ".join(metrics["unjudged_queries"][:10]),
        )
    return EXIT_OK


def _cmd_compare(args: argparse.Namespace, argv: Sequence[str]) -> int:
    import json

    from presentation_dependence.config import EvalConfig
    from presentation_dependence.io.atomic import atomic_write_text
    from presentation_dependence.runners.compare import compare_files, format_comparison

    _files("compare", args.run_a, args.run_b, args.qrels_file)
    cfg = EvalConfig(
        measures=list(args.measure) or EvalConfig().measures,
        relevance_level=args.relevance_level,
        judged_k=None,
    )
    result = compare_files(args.run_a, args.run_b, args.qrels_file, cfg, seed=args.seed)
    sys.stdout.write(format_comparison(result))
    if args.json:
        atomic_write_text(args.json, json.dumps(result, indent=1) + "\n")
        log.info("wrote %s", args.json)
    return EXIT_OK


def _cmd_report(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from presentation_dependence.report import write_report

    md, page = write_report(args.run_dirs, args.out, seed=args.seed, labels=args.label)
    log.info("wrote %s and %s", md, page)
    return EXIT_OK
