"""The ``presdep`` console command. Every subcommand parses, calls the package, returns an exit code.

presdep run CONFIG [--override KEY=VALUE ...] [--run-dir DIR] [--shard k/n] [--recompute-changed]
presdep eval --run-dir DIR [--qrels PATH]
presdep eval RUN QRELS [-m MEASURE ...] [-l LEVEL] [-q] [--json PATH]   (any TREC run file)
presdep psi-runs PRESENTATIONS (--config CONFIG | --candidates FILE [--qrels Q])
    --runs VARIANT RUN [RUN ...] ... --out DIR [--report]   (any system's runs; or --write-requests DIR)
presdep qa CONFIG --run-dir DIR [--override KEY=VALUE ...] [--shard k/n] [--from-records]
presdep configs [--root configs/experiments]
presdep init DIR [--force]   (the shipped configs/ and fixtures/, for an installed wheel)
presdep schema [--write PATH]
presdep judge CONFIG [--override KEY=VALUE ...] [--out DIR]
presdep noise CONFIG [--batch-sizes 1 4] [--repeats 2] [--one-at-a-time] [--reference FILE] [--out DIR]
presdep gate CONFIG [--threshold T] [--k K] [--verdict FILE]   (exit 1 = fail beyond noise)

Exit codes (every command): 0 done; 1 only ``presdep gate``'s "fail beyond noise"; 2 bad input
(config, data, paths: the message names the problem and the fix); 3 an internal error (a bug:
one line, the traceback with ``--debug``); 130 interrupted. Every message and traceback is
redacted (:mod:`presentation_dependence.secrets`).
"""

from __future__ import annotations

import argparse
import logging
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from presentation_dependence.errors import PresdepError
from presentation_dependence.secrets import RedactingFormatter, redact

__all__ = ["main", "make_parser"]

log = logging.getLogger("presentation_dependence.cli")

EXIT_OK = 0
EXIT_GATE_FAIL = 1  # reserved for ``presdep gate``: fail beyond noise
OVERRIDE_HELP = "dotted override, value parsed as YAML (repeatable), e.g. robustness.seed=3"
EXIT_USER_ERROR = 2
EXIT_INTERNAL_ERROR = 3
EXIT_INTERRUPTED = 130


if TYPE_CHECKING:  # StreamHandler is generic for type checkers (and at run time from 3.11)
    _StreamHandler = logging.StreamHandler[Any]
else:
    _StreamHandler = logging.StreamHandler


class _StderrHandler(_StreamHandler):
    """Writes to whatever ``sys.stderr`` is at the time of each record (not at setup)."""

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass


def setup_logging(verbose: bool = False) -> None:
    root = logging.getLogger("presentation_dependence")
    if any(getattr(h, "_presdep", False) for h in root.handlers):
        root.setLevel(logging.DEBUG if verbose else logging.INFO)
        return
    handler = _StderrHandler()
    handler.setFormatter(RedactingFormatter("%(levelname)s %(name)s: %(message)s"))
    handler._presdep = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if verbose else logging.INFO)


_RECOMPUTE_HELP = (
    "recompute finished queries whose input (query/passage texts, judgements) changed since "
    "they were written, instead of refusing the run folder"
)


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="presdep", description=__doc__.split("\n")[0])
    from presentation_dependence import __version__

    p.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    p.add_argument(
        "--debug", action="store_true", help="debug logging, and a traceback on internal errors"
    )
    p.add_argument("--version", action="version", version=f"presdep {__version__}")
    sub = p.add_subparsers(
        dest="command", required=True, help="the subcommand; presdep COMMAND -h for its flags"
    )

    r = sub.add_parser("run", help="rerank a config's data into a run folder")
    r.add_argument("config", help="configs/experiments/<ID>.yaml")
    r.add_argument(
        "--override",
        "-o",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="dotted override, value parsed as YAML (repeatable), e.g. data.top_k=20",
    )
    r.add_argument("--run-dir", help="run folder (default runs/<ID>/<timestamp>/); reuse to resume")
    r.add_argument("--shard", help="k/n: rank only queries i with i %% n == k (0-based)")
    r.add_argument("--eval", action="store_true", help="evaluate once the run is complete")
    r.add_argument("--recompute-changed", action="store_true", help=_RECOMPUTE_HELP)

    ps = sub.add_parser("psi", help="re-score under M presentations -> psi/psi_metrics.json")
    ps.add_argument("config", help="configs/experiments/<ID>.yaml (its robustness block)")
    ps.add_argument(
        "--override", "-o", action="append", default=[], metavar="KEY=VALUE", help=OVERRIDE_HELP
    )
    ps.add_argument("--run-dir", required=True, help="run folder (shared with 'presdep run')")
    ps.add_argument("--shard", help="k/n: score only queries i with i %% n == k (0-based)")
    ps.add_argument(
        "--from-scores",
        action="store_true",
        help="recompute the metrics from psi/grade_distributions.npz (no model call)",
    )
    ps.add_argument("--recompute-changed", action="store_true", help=_RECOMPUTE_HELP)

    pr = sub.add_parser(
        "psi-runs",
        help="tau-PSI, nDCG and flips of ANY system from its runs on recorded presentations",
        description="Order instability of any system: one TREC run per recorded presentation "
        "(psi/presentations.json) -> OUT/psi/psi_metrics.json, as 'presdep psi' writes it. "
        "With --write-requests, first write the presented lists as rank_llm request files.",
    )
    pr.add_argument("presentations", help="psi/presentations.json of 'presdep psi'")
    pr.add_argument("--config", help="experiment config whose data and robustness blocks are used")
    pr.add_argument(
        "--override", "-o", action="append", default=[], metavar="KEY=VALUE", help=OVERRIDE_HELP
    )
    pr.add_argument(
        "--candidates",
        help="instead of --config: the candidates in input order (rank_llm or RankGPT JSON)",
    )
    pr.add_argument("--qrels", help="with --candidates: the judgements (TREC qrels)")
    pr.add_argument(
        "--runs",
        action="append",
        nargs="+",
        default=[],
        metavar="VARIANT RUN",
        help="a variant name then its M run files in presentation order (repeatable), e.g. "
        "--runs random_shuffle s0.trec s1.trec --runs same_order given.trec given.trec",
    )
    pr.add_argument("--out", help="output folder (gets psi/psi_metrics.json)")
    pr.add_argument(
        "--from-ranks",
        action="store_true",
        help="score candidates by their rank in each run instead of the run's scores",
    )
    pr.add_argument("--report", action="store_true", help="also write OUT/report/report.{md,html}")
    pr.add_argument(
        "--write-requests",
        metavar="DIR",
        help="write DIR/<variant>/<m>.json rank_llm requests (candidates as presented) and stop",
    )

    qa = sub.add_parser("qa", help="QA with a frozen reader -> qa/qa_metrics.json")
    qa.add_argument("config", help="configs/experiments/<ID>.yaml (its qa and robustness blocks)")
    qa.add_argument(
        "--override", "-o", action="append", default=[], metavar="KEY=VALUE", help=OVERRIDE_HELP
    )
    qa.add_argument("--run-dir", required=True, help="run folder (shared with 'presdep run')")
    qa.add_argument("--shard", help="k/n: answer only questions i with i %% n == k (0-based)")
    qa.add_argument(
        "--from-records",
        action="store_true",
        help="recompute the metrics from qa/qa_records.jsonl (no model call)",
    )
    qa.add_argument("--recompute-changed", action="store_true", help=_RECOMPUTE_HELP)

    e = sub.add_parser(
        "eval",
        help="evaluate a run folder (-> metrics.json) or any TREC run file: eval RUN QRELS -m ...",
        description="Either --run-dir DIR (the run folder's eval block -> DIR/metrics.json) or, "
        "trec_eval style, RUN QRELS [-m MEASURE ...] (printed; --json PATH to keep them).",
    )
    e.add_argument("run", nargs="?", help="a TREC run file 'qid Q0 docid rank score tag'")
    e.add_argument("qrels_file", nargs="?", metavar="qrels", help="a TREC qrels file")
    e.add_argument("--run-dir", help="a run folder of 'presdep run' (instead of RUN QRELS)")
    e.add_argument("--qrels", help="with --run-dir: qrels file (default: the folder's qrels.txt)")
    e.add_argument(
        "-m",
        "--measure",
        action="append",
        default=[],
        metavar="MEASURE",
        help="with RUN QRELS, repeatable: ir_measures names (nDCG@10, RR@10, AP, Judged@10, "
        "P(rel=2)@10) or trec_eval names (ndcg_cut_10, recip_rank); default ndcg@10 map mrr",
    )
    e.add_argument(
        "-l",
        "--relevance-level",
        type=int,
        default=1,
        help="with RUN QRELS: minimum grade counted relevant by binary measures (TREC DL: 2)",
    )
    e.add_argument(
        "--judged-k",
        type=int,
        default=10,
        help="with RUN QRELS: also report Judged@k (0 = off; default 10)",
    )
    e.add_argument("-q", "--per-query", action="store_true", help="also print per-query values")
    e.add_argument("--json", metavar="PATH", help="with RUN QRELS: also write the metrics as JSON")

    c = sub.add_parser("configs", help="list the experiment configs")
    c.add_argument(
        "--root",
        help="folder of the configs (default: ./configs/experiments, else the installed ones)",
    )

    it = sub.add_parser("init", help="write the shipped configs/ and fixtures/ into a folder")
    it.add_argument("dir", help="target folder (then run the main job from there)")
    it.add_argument("--force", action="store_true", help="overwrite configs/ and fixtures/ there")

    s = sub.add_parser("schema", help="print (or write) the config schema in Markdown")
    s.add_argument("--write", metavar="PATH", help="write to PATH instead of printing")

    jd = sub.add_parser("judge", help="N-way judge sweep (or task: rank) -> records + report")
    jd.add_argument("config", help="configs/judge/<ID>.yaml")
    jd.add_argument(
        "--override", "-o", action="append", default=[], metavar="KEY=VALUE", help=OVERRIDE_HELP
    )
    jd.add_argument("--out", help="output folder (default <output_root>/<ID>/<timestamp>/)")

    nz = sub.add_parser("noise", help="rerun noise: judge the same items repeatedly, compare")
    nz.add_argument("config", help="configs/judge/<ID>.yaml (its noise block)")
    nz.add_argument(
        "--override", "-o", action="append", default=[], metavar="KEY=VALUE", help=OVERRIDE_HELP
    )
    nz.add_argument("--out", help="output folder (default <output_root>/<ID>/<timestamp>/)")
    nz.add_argument("--batch-sizes", type=int, nargs="+", help="conditions (default: config)")
    nz.add_argument("--repeats", type=int, help="runs per condition (default: config)")
    nz.add_argument("--one-at-a-time", action="store_true", help="add a one-at-a-time condition")
    nz.add_argument("--reference", help="records.jsonl of these requests: run 0 of condition 1")

    g = sub.add_parser("gate", help="noise-aware pass/fail of a judge score (exit 1 = fail)")
    g.add_argument("config", help="configs/judge/<ID>.yaml (its gate block)")
    g.add_argument(
        "--override", "-o", action="append", default=[], metavar="KEY=VALUE", help=OVERRIDE_HELP
    )
    g.add_argument("--threshold", type=float, help="gate.threshold")
    g.add_argument("--k", type=int, help="gate.k: calls per case")
    g.add_argument("--verdict", help="JSON verdict path (default <output_root>/<ID>/<ts>/...)")
    return p


def _cmd_run(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from presentation_dependence.config import load_experiment_config
    from presentation_dependence.runners import EvalManager, ExperimentManager, parse_shard

    cfg = load_experiment_config(args.config, args.override)
    mgr = ExperimentManager(
        cfg,
        args.run_dir,
        shard=parse_shard(args.shard),
        argv=argv,
        recompute_changed=args.recompute_changed,
    )
    summary = mgr.run()
    log.info(
        "%s: %d computed, %d reused, run %s",
        summary.run_dir,
        summary.computed,
        summary.reused,
        "complete" if summary.complete else "incomplete (other shards pending)",
    )
    if args.eval and summary.complete:
        EvalManager(summary.run_dir, argv=argv).evaluate()
    return EXIT_OK


def _cmd_psi(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from presentation_dependence.config import load_experiment_config
    from presentation_dependence.robustness.runner import PSIRunner
    from presentation_dependence.runners import parse_shard

    cfg = load_experiment_config(args.config, args.override)
    runner = PSIRunner(
        cfg,
        args.run_dir,
        shard=parse_shard(args.shard),
        argv=argv,
        recompute_changed=args.recompute_changed,
    )
    metrics = runner.run(from_scores=args.from_scores)
    if metrics is not None:
        for var, block in metrics["variants"].items():
            s = block["summary"]
            log.info(
                "%s: tau-PSI %.3f [%.3f, %.3f], nDCG@%d mean %.3f, jaccard@top-k %s",
                var,
                s["tau_psi"]["mean"],
                s["tau_psi"]["ci_low"],
                s["tau_psi"]["ci_high"],
                metrics["ndcg_k"],
                s["ndcg_mean"]["mean"],
                f"{s['jaccard_topk']['mean']:.3f}" if "jaccard_topk" in s else "n/a",
            )
    return EXIT_OK


def _psi_runs_config(args: argparse.Namespace) -> Any:
    from presentation_dependence.config import load_experiment_config
    from presentation_dependence.config.experiment import config_from_raw

    if (args.config is None) == (args.candidates is None):
        raise PresdepError(
            "presdep psi-runs: give the candidates either as --config CONFIG (the config of "
            "'presdep psi') or as --candidates FILE [--qrels QRELS], one of the two"
        )
    if args.config is not None:
        return load_experiment_config(args.config, args.override)
    data = {"dataloader_class": "RankLLMJsonLoader", "path": args.candidates}
    if args.qrels:
        data["qrels"] = args.qrels
    return config_from_raw({"data": data}, Path(args.candidates).stem)


def _cmd_psi_runs(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from presentation_dependence.data import load_dataset
    from presentation_dependence.robustness import external

    cfg = _psi_runs_config(args)
    if args.write_requests:
        pres = external.read_presentations(args.presentations)
        written = external.write_presentation_requests(
            pres, load_dataset(cfg.data).requests, args.write_requests
        )
        for var, paths in written.items():
            log.info("%s: %d request files under %s", var, len(paths), paths[0].parent)
        return EXIT_OK
    if not args.runs or not args.out:
        raise PresdepError(
            "presdep psi-runs: give --runs VARIANT RUN [RUN ...] (per variant) and --out DIR, "
            "or --write-requests DIR"
        )
    runs: dict[str, list[str]] = {}
    for group in args.runs:
        if len(group) < 2 or group[0] in runs:
            raise PresdepError(
                f"presdep psi-runs: --runs {' '.join(group)}: give each variant once, as a name "
                "then its run files"
            )
        runs[group[0]] = group[1:]
    metrics = external.run_psi_runs(
        cfg, args.presentations, runs, args.out, from_ranks=args.from_ranks, argv=argv
    )
    for var, block in metrics["variants"].items():
        s = block["summary"]
        log.info(
            "%s: tau-PSI %.3f [%.3f, %.3f], nDCG@%d mean %.3f",
            var,
            s["tau_psi"]["mean"],
            s["tau_psi"]["ci_low"],
            s["tau_psi"]["ci_high"],
            metrics["ndcg_k"],
            s["ndcg_mean"]["mean"],
        )
    if args.report:
        from presentation_dependence.report import write_report

        md, _ = write_report([args.out], Path(args.out) / "report")
        log.info("wrote %s", md)
    return EXIT_OK


def _cmd_qa(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from presentation_dependence.config import load_experiment_config
    from presentation_dependence.qa.runner import QARunner
    from presentation_dependence.runners import parse_shard

    cfg = load_experiment_config(args.config, args.override)
    runner = QARunner(
        cfg,
        args.run_dir,
        shard=parse_shard(args.shard),
        argv=argv,
        recompute_changed=args.recompute_changed,
    )
    metrics = runner.run(from_records=args.from_records)
    if metrics is not None:
        for var, block in metrics["variants"].items():
            s = block["summary"]
            log.info(
                "%s: nDCG@%d %.3f, tau-PSI %.3f, answer flip rate %.3f [%.3f, %.3f], EM %.3f, F1 %.3f",
                var,
                metrics["ndcg_k"],
                s["ndcg_mean"]["mean"],
                s["tau_psi"]["mean"],
                s["answer_flip"]["mean"],
                s["answer_flip"]["ci_low"],
                s["answer_flip"]["ci_high"],
                s["em"]["mean"],
                s["f1"]["mean"],
            )
        c = metrics["control"]
        log.info("control (all paragraphs): EM %.3f, F1 %.3f", c["em"]["mean"], c["f1"]["mean"])
    return EXIT_OK


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
    return _cmd_eval_files(args)


def _cmd_eval_files(args: argparse.Namespace) -> int:
    import json

    from presentation_dependence.config import EvalConfig
    from presentation_dependence.io.atomic import atomic_write_text
    from presentation_dependence.runners.evaluation import evaluate_files, format_trec_eval

    if not args.run or not args.qrels_file:
        raise PresdepError(
            "presdep eval: give RUN QRELS (a TREC run file and a qrels file), e.g. "
            "'presdep eval run.trec qrels.txt -m nDCG@10 -m RR@10', or --run-dir DIR"
        )
    for path in (args.run, args.qrels_file):
        if not Path(path).is_file():
            raise PresdepError(f"presdep eval: {path} is not a file")
    cfg = EvalConfig(
        measures=list(args.measure) or EvalConfig().measures,
        relevance_level=args.relevance_level,
        judged_k=args.judged_k or None,
    )
    metrics = evaluate_files(args.run, args.qrels_file, cfg)
    sys.stdout.write(format_trec_eval(metrics, per_query=args.per_query))
    if args.json:
        atomic_write_text(args.json, json.dumps(metrics, indent=1) + "\n")
        log.info("wrote %s", args.json)
    if metrics["unjudged_queries"]:
        log.warning(
            "%d queries of the run have no judgements and are not averaged: %s",
            len(metrics["unjudged_queries"]),
            ", ".join(metrics["unjudged_queries"][:10]),
        )
    return EXIT_OK


def _cmd_configs(args: argparse.Namespace) -> int:
    from presentation_dependence.config import list_experiment_configs
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
    sys.stdout.write("".join(f"{i.ljust(width)}  {d}\n" for i, d in rows))
    return EXIT_OK


def _cmd_init(args: argparse.Namespace) -> int:
    from presentation_dependence.resources import init_project

    for path in init_project(args.dir, force=args.force):
        log.info("wrote %s", path)
    log.info(
        "next: cd %s && presdep run configs/experiments/example-noveleval-smollm2.yaml --eval",
        args.dir,
    )
    return EXIT_OK


def _cmd_schema(args: argparse.Namespace) -> int:
    from presentation_dependence.config.schema_doc import schema_markdown

    text = schema_markdown()
    if args.write:
        Path(args.write).write_text(text, encoding="utf-8")
        log.info("wrote %s", args.write)
    else:
        sys.stdout.write(text)
    return EXIT_OK


def _judge_config(args: argparse.Namespace, extra: Sequence[str] = ()) -> Any:
    from presentation_dependence.judge.config import load_judge_config

    return load_judge_config(args.config, [*args.override, *extra])


def _cmd_judge(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from presentation_dependence.judge.runner import run_judge_task

    cfg = _judge_config(args)
    run_judge_task(cfg, Path(args.out) if args.out else None, argv)
    return EXIT_OK


def _cmd_noise(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from presentation_dependence.judge.runner import run_noise_task

    extra = [f"noise.batch_sizes={list(args.batch_sizes)}"] if args.batch_sizes else []
    extra += [f"noise.repeats={args.repeats}"] if args.repeats is not None else []
    extra += ["noise.one_at_a_time=true"] if args.one_at_a_time else []
    cfg = _judge_config(args, extra)
    ref = Path(args.reference) if args.reference else None
    run_noise_task(cfg, Path(args.out) if args.out else None, argv, reference=ref)
    return EXIT_OK


def _cmd_gate(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from presentation_dependence.judge.runner import run_gate_task

    extra = [f"gate.threshold={args.threshold}"] if args.threshold is not None else []
    extra += [f"gate.k={args.k}"] if args.k is not None else []
    verdict = run_gate_task(
        _judge_config(args, extra), Path(args.verdict) if args.verdict else None, argv
    )
    sys.stdout.write(verdict.reason + "\n")
    return verdict.exit_code


def _dispatch(args: argparse.Namespace, full_argv: Sequence[str]) -> int:
    if args.command == "run":
        return _cmd_run(args, full_argv)
    if args.command == "psi":
        return _cmd_psi(args, full_argv)
    if args.command == "qa":
        return _cmd_qa(args, full_argv)
    if args.command == "psi-runs":
        return _cmd_psi_runs(args, full_argv)
    if args.command == "eval":
        return _cmd_eval(args, full_argv)
    if args.command == "configs":
        return _cmd_configs(args)
    if args.command == "init":
        return _cmd_init(args)
    if args.command in ("judge", "noise", "gate"):
        cmd = {"judge": _cmd_judge, "noise": _cmd_noise, "gate": _cmd_gate}[args.command]
        return cmd(args, full_argv)
    return _cmd_schema(args)


_PATH_ERRORS = (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; the one place that turns exceptions into exit codes (module docstring)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = make_parser().parse_args(argv)  # argparse itself exits 2 on bad arguments
    setup_logging(args.verbose or args.debug)
    try:
        return _dispatch(args, ["presdep", *argv])
    except PresdepError as e:
        log.error("%s", e)
        return EXIT_USER_ERROR
    except _PATH_ERRORS as e:
        log.error("%s: %s. Fix: check the path", e.strerror or type(e).__name__, e.filename)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        log.error("interrupted; rerun the same command to resume where it stopped")
        return EXIT_INTERRUPTED
    except Exception as e:
        log.error(
            "internal error: %s: %s (a bug, not your input; rerun with --debug for the "
            "traceback and report it)",
            type(e).__name__,
            e,
        )
        if args.debug:
            sys.stderr.write(redact(traceback.format_exc()))
        return EXIT_INTERNAL_ERROR


if __name__ == "__main__":
    raise SystemExit(main())
