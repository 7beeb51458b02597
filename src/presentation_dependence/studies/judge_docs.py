"""Render the measured sections of docs/studies/judge-*.md from a ``presdep noise`` output folder.

``python scripts/judge_doc.py RUN_DIR [--doc docs/studies/judge-nway-v1-gsm8k.md]`` replaces the text between
``<!-- judge-measured:start -->`` and ``<!-- judge-measured:end -->`` with tables rendered from
the folder's ``summary.json``, ``noise.json``, ``resolved_config.yaml`` and ``provenance.json``.
No number in that section is typed by hand.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from presentation_dependence.errors import ConfigError
from presentation_dependence.io.atomic import atomic_write_bytes
from presentation_dependence.io.markdown import markdown_table
from presentation_dependence.judge.config import config_from_raw
from presentation_dependence.judge.items.loaders import load_response_set
from presentation_dependence.judge.items.records import read_records
from presentation_dependence.judge.report import (
    fmt,
    noise_markdown,
    paired_tests_markdown,
    sweep_markdown,
)
from presentation_dependence.report.markers import markers, splice_file
from presentation_dependence.runners.readback import folder_config, read_provenance
from presentation_dependence.studies.judge_plan import plan_markdown
from presentation_dependence.studies.judge_study import load_study
from presentation_dependence.studies.judge_tables import slot_accuracy_png, study_markdown

__all__ = [
    "MARK_END",
    "MARK_START",
    "STUDY_END",
    "STUDY_START",
    "measured_markdown",
    "update_doc",
    "update_study_doc",
]

MARK_START, MARK_END = markers("judge-measured")


def _load(folder: Path, name: str) -> Any:
    path = folder / name
    if not path.is_file():
        raise ConfigError(f"{path} not found: is {folder} a 'presdep noise' output folder?")
    text = path.read_text(encoding="utf-8")
    return yaml.safe_load(text) if name.endswith(".yaml") else json.loads(text)


def _judge_invocation(folder: Path) -> Mapping[str, Any]:
    """The first invocation of ``folder`` that described the judge (a resumed run has several;
    the first is when the measurement began)."""
    prov = next((p for p in read_provenance(folder).invocations if "judge" in p), None)
    if prov is None:
        raise ConfigError(f"{folder}: no provenance.json invocation describes the judge")
    return prov


def measured_markdown(folder: Path) -> str:
    """The measured section: setup, commands, sweep, slots, rerun noise, paired tests."""
    summary = _load(folder, "summary.json")
    noise = _load(folder, "noise.json")
    prov = _judge_invocation(folder)
    cfg = folder_config(folder, config_from_raw)
    eligible = len(load_response_set(replace(cfg.data, max_items=None, require_one_correct=True)))
    judge = prov.get("judge", {})
    opts = judge.get("options", {})
    ident = noise["identity"]
    first = noise["runs"][0]
    secs = [r["seconds"] for r in noise["runs"] if r["seconds"] is not None]
    setup = [
        (
            "data",
            f"{cfg.data.dataset}: first {summary['items']} of the {eligible} items with "
            "exactly one correct response",
        ),
        (
            "placements",
            f"{cfg.placement.mode} (seed {summary['placement']['seed']}), "
            f"{fmt(summary['placements_per_item'], 0)} per item, {first['records']} calls per run",
        ),
        ("judge model", f"{opts.get('model_name')} = `{ident['model_snapshot']}`"),
        (
            "decoding",
            f"{judge.get('decoding')}, max_new_tokens {opts.get('max_new_tokens')}, "
            + (
                f"{judge.get('dtype')} on {judge.get('device')}, torch threads "
                f"{opts.get('num_threads')}"
                if "dtype" in judge
                else f"served as {judge.get('served_model')} at {opts.get('base_url')}"
            ),
        ),
        (
            "prompt / parser / seed",
            f"`{ident['prompt_version']}` / `{ident['parser_version']}` / {ident['seed']}",
        ),
        (
            "software",
            f"torch {judge.get('torch')}, transformers {judge.get('transformers')}"
            if "torch" in judge
            else f"the server's: version {judge['server_version']} (its `GET /version`)"
            if judge.get("server_version")
            else "the server's (it did not tell its version)",
        ),
        ("code", f"git {str(prov['git'].get('commit'))[:12]} (dirty: {prov['git'].get('dirty')})"),
        ("wall time", f"{fmt(sum(secs) / 60, 1)} min for {len(secs)} runs, {prov['time_utc']}"),
    ]
    parts = [
        f"Rendered by `python scripts/judge_doc.py {folder}` from the output of:\n\n",
        "```bash\n" + shlex.join(["uv", "run", *prov["command"]]) + "\n```\n\n",
        "\n".join(markdown_table(["", ""], setup, compact_empty=True)) + "\n",
        f"\n### Placement sweep (run 0 of {first['condition']})\n\n" + sweep_markdown(summary),
        "\n### Rerun noise\n\n" + noise_markdown(noise),
    ]
    parts.append(_examples(folder, first["condition"]))
    if noise.get("paired_tests"):
        parts.append("\n### Paired tests between batch sizes\n\n" + paired_tests_markdown(noise))
    return "".join(parts)


def _examples(folder: Path, condition: str, count: int = 3, chars: int = 160) -> str:
    path = folder / "noise" / condition.replace("=", "") / "run0.jsonl"
    if not path.is_file():
        return ""
    rows = []
    for rec in read_records(path)[:count]:
        text = " ".join(rec.judgement.split())[:chars].replace("|", "\\|")
        slot = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[rec.correct_slot]
        rows.append([rec.item_id, "".join(map(str, rec.placement)), slot, rec.parse_status, text])
    head = ["item", "placement", "correct slot", "parse", "judgement"]
    return (
        f"\nFirst {len(rows)} judgements of that run (whitespace collapsed, first {chars} "
        "characters):\n\n" + "".join(f"{line}\n" for line in markdown_table(head, rows))
    )


def update_doc(doc: Path, folder: Path, block: str = "judge-measured") -> None:
    """Replace the section ``block`` of ``doc`` with :func:`measured_markdown` of ``folder``."""
    splice_file(doc, block, measured_markdown(folder))


STUDY_START, STUDY_END = markers("judge-study")


def update_study_doc(
    doc: Path, root: Path, figure: Path | None = None, plan: Sequence[Path] = ()
) -> None:
    """Replace the ``judge-study`` section of ``doc`` with the tables of the study under
    ``root`` (:mod:`~presentation_dependence.studies.judge_tables`); write the accuracy-by-slot figure
    to ``figure`` (linked from the doc, relative to it); with ``plan`` configs, add their
    calls and the CPU time estimated from the measured runs
    (:mod:`~presentation_dependence.studies.judge_plan`)."""
    import os

    runs = load_study(root)
    link = None
    if figure is not None and any(r.kind == "judge" for r in runs):
        atomic_write_bytes(figure, slot_accuracy_png(runs))
        link = os.path.relpath(figure, doc.parent)
    head = f"Rendered by `python scripts/judge_doc.py --study {root}` from its run folders.\n\n"
    text = head + study_markdown(runs, link)
    if plan:
        text += "\n### Full-size runs: calls and estimated CPU time\n\n" + plan_markdown(plan, runs)
    splice_file(doc, "judge-study", text)
