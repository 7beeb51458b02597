"""``presdep run | psi | psi-runs | qa``: rerank a config's data, and measure order instability.

presdep run CONFIG [--override KEY=VALUE ...] [--run-dir DIR] [--shard k/n] [--recompute-changed]
presdep psi CONFIG --run-dir DIR | presdep psi [CONFIG] --run-dir DIR --from-scores
presdep psi-runs PRESENTATIONS (--config CONFIG | --candidates FILE [--qrels Q])
    --runs VARIANT RUN [RUN ...] ... --out DIR [--report]   (any system's runs; or --write-requests DIR)
presdep qa CONFIG --run-dir DIR [--override KEY=VALUE ...] [--shard k/n] [--from-records]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from presentation_dependence.cli.common import (
    EXIT_OK,
    Handler,
    Subparsers,
    add_config,
    add_out,
    add_override,
    add_recompute_changed,
    add_run_dir,
    add_shard,
    command,
    log,
)
from presentation_dependence.errors import PresdepError

__all__ = ["register"]


def register(sub: Subparsers) -> None:
    r = _runner(sub, "run", _cmd_run, "rerank a config's data into a run folder", "rank")
    r.add_argument("--eval", action="store_true", help="evaluate once the run is complete")
    _register_rerank(sub)
    ps = _runner(sub, "psi", _cmd_psi, "re-score under M presentations -> psi/psi_metrics.json")
    ps.add_argument(
        "--from-scores",
        action="store_true",
        help="recompute the metrics from psi/grade_distributions.npz (no model call); without "
        "CONFIG, by the run folder's own resolved_config.yaml (e.g. an archived folder)",
    )

    d = command(
        sub,
        "psi-diff",
        _cmd_psi_diff,
        "two PSI folders of one config (two machines, a CPU and a GPU), score by score",
    )
    d.add_argument("a", help="a run folder or archive with psi/grade_distributions.npz")
    d.add_argument("b", help="the other, same candidates and presentations")

    pr = command(
        sub,
        "psi-runs",
        _cmd_psi_runs,
        "tau-PSI, nDCG and flips of ANY system from its runs on recorded presentations",
        description="Order instability of any system: one TREC run per recorded presentation "
        "(psi/presentations.json) -> OUT/psi/psi_metrics.json, as 'presdep psi' writes it. "
        "With --write-requests, first write the presented lists as rank_llm request files.",
    )
    pr.add_argument("presentations", help="psi/presentations.json of 'presdep psi'")
    pr.add_argument("--config", help="experiment config whose data and robustness blocks are used")
    add_override(pr)
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
    add_out(pr, "output folder (gets psi/psi_metrics.json)")
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

    qa = _runner(sub, "qa", _cmd_qa, "QA with a frozen reader -> qa/qa_metrics.json", "answer")
    qa.add_argument(
        "--from-records",
        action="store_true",
        help="recompute the metrics from qa/qa_records.jsonl (no model call)",
    )


# The config and run folder of each resumable runner: (CONFIG help, override example, --run-dir
# help; an empty help makes --run-dir required).
_RUNNERS = {
    "run": (
        "configs/experiments/<ID>.yaml",
        "data.top_k=20",
        "run folder (default runs/<ID>/<timestamp>/); reuse to resume",
    ),
    "psi": (
        "configs/experiments/<ID>.yaml (its robustness block); left out: the run folder's own "
        "resolved_config.yaml (a 'presdep rerank' folder, an archived one)",
        "",
        "",
    ),
    "qa": ("configs/experiments/<ID>.yaml (its qa and robustness blocks)", "", ""),
}


def _runner(
    sub: Subparsers, name: str, handler: Handler, help: str, verb: str = "score"
) -> argparse.ArgumentParser:
    """A resumable runner's subcommand: CONFIG, --override, --run-dir, --shard, --recompute-changed."""
    config_help, example, run_dir_help = _RUNNERS[name]
    p = command(sub, name, handler, help)
    add_config(p, config_help, override_example=example, optional=name == "psi")
    add_run_dir(p, required=not run_dir_help, help=run_dir_help)
    add_shard(p, verb)
    add_recompute_changed(p)
    return p


def _resumable(
    args: argparse.Namespace, argv: Sequence[str], cfg: Any = None
) -> tuple[Any, Any, dict[str, Any]]:
    """What every resumable runner (run, psi, qa) takes: the config (loaded from CONFIG unless
    given), the run folder, and the keywords shard, argv and recompute_changed."""
    from presentation_dependence.config import load_experiment_config
    from presentation_dependence.runners import parse_shard

    if cfg is None:
        cfg = load_experiment_config(args.config, args.override)
    keywords = {
        "shard": parse_shard(args.shard),
        "argv": argv,
        "recompute_changed": args.recompute_changed,
    }
    return cfg, args.run_dir, keywords


def _register_rerank(sub: Subparsers) -> None:
    rr = command(
        sub,
        "rerank",
        _cmd_rerank,
        "rerank any TREC run over a BEIR folder or a corpus + topics file, no YAML",
        description="Rerank the top-k of RUN with a registered reranker or a shipped student. "
        "The config it builds is frozen into the run folder (resolved_config.yaml), so "
        "'presdep run' on that file reproduces the run, and 'presdep psi' takes it.",
    )
    rr.add_argument("trec_run", metavar="RUN", help="the first-stage TREC run (6 columns)")
    rr.add_argument("--beir", help="a BEIR folder: corpus.jsonl, queries.jsonl, qrels/test.tsv")
    rr.add_argument("--corpus", help="instead of --beir: passages (TSV id<TAB>text, or JSONL)")
    rr.add_argument("--topics", help="with --corpus: queries (TSV qid<TAB>text, or JSONL)")
    rr.add_argument("--qrels", help="judgements (TREC qrels) for --eval")
    rr.add_argument(
        "--reranker",
        default="GradeReranker",
        help="a reranker class (GradeReranker: the embedded readout; E5BiEncoderReranker ...) "
        "or a shipped student (presdep student list); default GradeReranker",
    )
    rr.add_argument("--top-k", type=int, default=20, help="candidates reranked per query")
    add_override(rr, "reranker.max_passage_chars=300")
    add_run_dir(rr, required=False, help="run folder (default runs/<ID>/<timestamp>/)")
    add_shard(rr, "rank")
    add_recompute_changed(rr)
    rr.add_argument("--eval", action="store_true", help="evaluate once the run is complete")


def _cmd_rerank(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from presentation_dependence.config.adhoc import adhoc_config

    cfg = adhoc_config(
        args.trec_run,
        beir=args.beir,
        corpus=args.corpus,
        topics=args.topics,
        qrels=args.qrels,
        reranker=args.reranker,
        top_k=args.top_k,
        overrides=args.override,
    )
    return _cmd_run(args, argv, cfg)


def _cmd_run(args: argparse.Namespace, argv: Sequence[str], cfg: Any = None) -> int:
    from presentation_dependence.runners import EvalManager, ExperimentManager

    cfg, run_dir, keywords = _resumable(args, argv, cfg)
    summary = ExperimentManager(cfg, run_dir, **keywords).run()
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


def _log_variants(metrics: Mapping[str, Any], *, jaccard: bool) -> None:
    """One line per variant of a ``psi_metrics.json``: τ-PSI with its CI and mean nDCG."""
    for var, block in metrics["variants"].items():
        s = block["summary"]
        extra = ""
        if jaccard:
            value = f"{s['jaccard_topk']['mean']:.3f}" if "jaccard_topk" in s else "n/a"
            extra = f", jaccard@top-k {value}"
        log.info(
            "%s: tau-PSI %.3f [%.3f, %.3f], nDCG@%d mean %.3f%s",
            var,
            s["tau_psi"]["mean"],
            s["tau_psi"]["ci_low"],
            s["tau_psi"]["ci_high"],
            metrics["ndcg_k"],
            s["ndcg_mean"]["mean"],
            extra,
        )


def _cmd_psi(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from presentation_dependence.robustness.runner import PSIRunner
    from presentation_dependence.runners.readback import folder_config

    if args.config is None and args.override:
        raise PresdepError(
            "presdep psi: --override changes a CONFIG; without CONFIG the run folder's own "
            "resolved_config.yaml is used as it is. Fix: give CONFIG, or drop --override"
        )
    cfg = folder_config(args.run_dir) if args.config is None else None
    cfg, run_dir, keywords = _resumable(args, argv, cfg)
    metrics = PSIRunner(cfg, run_dir, **keywords).run(from_scores=args.from_scores)
    if metrics is not None:
        _log_variants(metrics, jaccard=True)
    return EXIT_OK


def _cmd_psi_diff(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from presentation_dependence.robustness.archive_diff import archive_diff

    sys.stdout.write(archive_diff(args.a, args.b).line() + "\n")
    return EXIT_OK


def _psi_runs_config(args: argparse.Namespace) -> Any:
    from presentation_dependence.config import load_experiment_config
    from presentation_dependence.config.experiment import config_from_raw
    from presentation_dependence.config.loader import apply_overrides

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
    raw = apply_overrides({"data": data}, args.override, "--override")  # data.top_k, robustness.*
    return config_from_raw(raw, Path(args.candidates).stem)


def _cmd_psi_runs(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from presentation_dependence.data import load_dataset
    from presentation_dependence.data.config import resolve_path
    from presentation_dependence.io.rankllm_json import read_rankllm_docs
    from presentation_dependence.robustness import external

    cfg = _psi_runs_config(args)
    if args.write_requests:
        pres = external.read_presentations(args.presentations)
        requests = load_dataset(cfg.data).requests  # validates the file
        docs = None  # a rank_llm file's own doc objects (title and text apart) travel as they are
        if cfg.data.dataloader_class == "RankLLMJsonLoader":
            source = resolve_path(cfg.data.path, "path")
            docs = None if source is None else read_rankllm_docs(source)
        written = external.write_presentation_requests(
            pres, requests, args.write_requests, docs=docs
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
    _log_variants(metrics, jaccard=False)
    if args.report:
        from presentation_dependence.report import write_report

        md, _ = write_report([args.out], Path(args.out) / "report")
        log.info("wrote %s", md)
    return EXIT_OK


def _cmd_qa(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from presentation_dependence.qa.runner import QARunner

    cfg, run_dir, keywords = _resumable(args, argv)
    metrics = QARunner(cfg, run_dir, **keywords).run(from_records=args.from_records)
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
