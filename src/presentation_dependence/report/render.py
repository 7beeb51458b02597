"""Turn PSI run folders into ``report.md`` and a self-contained ``report.html`` with plots."""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np

from presentation_dependence.config import ExperimentConfig
from presentation_dependence.errors import PresdepError
from presentation_dependence.io.atomic import atomic_write_bytes, atomic_write_text
from presentation_dependence.io.markdown import markdown_table
from presentation_dependence.metrics.decisions import retained_set
from presentation_dependence.metrics.stats import paired_comparison
from presentation_dependence.report import figures
from presentation_dependence.rerankers.base import GRADE_SCALE_PARADIGMS, block_paradigm
from presentation_dependence.robustness.store import NULL
from presentation_dependence.runners.readback import folder_config, read_provenance

__all__ = ["load_psi_run", "run_labels", "slot_axis_label", "slot_series", "write_report"]


def load_psi_run(run_dir: Path, label: str | None = None) -> dict[str, Any]:
    """A PSI run folder's config, metrics and columns; ``label`` names it in the report (default:
    the folder's name)."""
    metrics_path = run_dir / "psi" / "psi_metrics.json"
    if not metrics_path.exists():
        raise PresdepError(f"{metrics_path} missing: run 'presdep psi CONFIG --run-dir {run_dir}'")
    cfg = folder_config(run_dir)
    with np.load(run_dir / "psi" / "grade_distributions.npz", allow_pickle=False) as z:
        cols = {k: z[k] for k in z.files}
    return {
        "dir": run_dir,
        "config": cfg,
        "metrics": json.loads(metrics_path.read_text("utf-8")),
        "cols": cols,
        "label": label or run_dir.name,
        "system": _system(cfg.id, cfg.reranker.to_plain()),
        "grades": _scores_are_grades(run_dir, cfg),
    }


def run_labels(run_dirs: Sequence[Path], labels: Sequence[str] | None = None) -> list[str]:
    """One label per run folder: ``labels`` (``--label``), else each folder's name, with as many
    parent folders as it takes to tell folders of the same name apart (``a/psi``, ``b/psi``).

    Two folders with one label are refused (the report's rows, paired tests and plot lines are
    keyed by it; one would silently hide the other).
    """
    if labels:
        if len(labels) != len(run_dirs):
            raise PresdepError(
                f"presdep report: {len(labels)} --label for {len(run_dirs)} run folders. Fix: give "
                "one --label per run folder, in the order of the folders"
            )
        chosen = [str(x) for x in labels]
    else:
        parts = [Path(d).resolve().parts for d in run_dirs]
        chosen = [_short_name(p, parts[:i] + parts[i + 1 :]) for i, p in enumerate(parts)]
    seen: dict[str, Path] = {}
    for label, d in zip(chosen, run_dirs, strict=True):
        if label in seen:
            raise PresdepError(
                f"presdep report: {seen[label]} and {d} have the same label {label!r}. Fix: "
                "give each run folder once, and its own name with --label (one per folder)"
            )
        seen[label] = Path(d)
    return chosen


def _short_name(parts: tuple[str, ...], others: Sequence[tuple[str, ...]]) -> str:
    """The last ``k`` parts of a path, ``k`` the fewest that no other path ends in (the name
    alone for a folder given twice: refused as a duplicate label)."""
    for k in range(1, len(parts) + 1):
        if all(o[-k:] != parts[-k:] for o in others):
            return "/".join(parts[-k:])
    return parts[-1]


def _scores_are_grades(run_dir: Path, cfg: ExperimentConfig) -> bool:
    """Whether the folder's scores are expected grades: its own reranker's scores (not another
    system's runs, ``presdep psi-runs``) and that reranker reads grades (GRADE_SCALE_PARADIGMS)."""
    if read_provenance(run_dir).phase("psi-runs"):
        return False
    return block_paradigm(cfg.reranker.to_plain()) in GRADE_SCALE_PARADIGMS


def _system(config_id: str, block: dict[str, Any]) -> str:
    """The config id, plus the adapter's folder for a trained student (same config, new adapter);
    ``block`` is the config's reranker block, plain."""
    if block.get("adapter"):
        return f"{config_id}+{block['adapter']}"
    adapter = block.get("adapter_path")
    if not adapter:
        return config_id
    parts = Path(adapter).parts
    name = parts[-2] if len(parts) > 1 and parts[-1] == "adapter" else parts[-1]
    return f"{config_id}+{name}"


def _fmt(s: dict[str, float], digits: int = 3) -> str:
    return f"{s['mean']:.{digits}f} [{s['ci_low']:.{digits}f}, {s['ci_high']:.{digits}f}]"


def _table(runs: Sequence[dict[str, Any]]) -> list[str]:
    head = [
        "run",
        "variant",
        "M",
        "τ-PSI",
        "mean Kendall τ-b",
        "nDCG@k given order",
        "nDCG@k mean over presentations",
        "ΔnDCG@k (max−min)",
        "Jaccard top-k",
        "top-k flip rate",
        "score var",
        "Zeng PSI (slot buckets)",
        "passes/query",
    ]
    rows = []
    for r in runs:
        m = r["metrics"]
        given = _fmt(m["given_order"]["ndcg"])
        for var, block in m["variants"].items():
            s = block["summary"]
            cost = m.get("cost", {}).get(var, {}).get("forward_passes_per_query")
            rows.append(
                [
                    f"`{r['label']}`",
                    var + (" (null)" if var == NULL else ""),
                    str(block["num_presentations"]),
                    _fmt(s["tau_psi"]),
                    _fmt(s["mean_tau"]),
                    given,
                    _fmt(s["ndcg_mean"]),
                    _fmt(s["delta_ndcg"]),
                    _fmt(s["jaccard_topk"]) if "jaccard_topk" in s else "—",
                    _fmt(s["changed_topk"], 2) if "changed_topk" in s else "—",
                    f"{s['score_var']['mean']:.4f}",
                    "—"
                    if block.get("zeng_psi_corpus") is None
                    else f"{block['zeng_psi_corpus']:.3f}",
                    "—" if cost is None else f"{cost:.0f}",
                ]
            )
    return markdown_table(head, rows)


def _paired(runs: Sequence[dict[str, Any]], seed: int) -> list[str]:
    if len(runs) < 2:
        return []
    base = runs[0]
    lines = [
        "",
        f"Paired over queries against `{base['label']}` (seeded paired bootstrap, 95% CI, and "
        "a paired permutation test):",
        "",
    ]
    rows = []
    for r in runs[1:]:
        for var in r["metrics"]["variants"]:
            if var == NULL or var not in base["metrics"]["variants"]:
                continue
            for metric in ("tau_psi", "ndcg_mean"):
                pa = base["metrics"]["variants"][var]["per_query"]
                pb = r["metrics"]["variants"][var]["per_query"]
                qids = [q for q in pa if q in pb]
                a = np.array([pb[q][metric] for q in qids])
                b = np.array([pa[q][metric] for q in qids])
                key = f"{r['label']}/{var}/{metric}"
                boot = paired_comparison(a, b, stream=(seed, key))
                diff = f"{boot['mean_diff']:+.3f} [{boot['ci_low']:+.3f}, {boot['ci_high']:+.3f}]"
                p_boot, p_perm = f"{boot['p_value']:.3g}", f"{boot['permutation_p']:.3g}"
                rows.append([f"`{r['label']}`", var, metric, diff, p_boot, p_perm])
    head = ["run", "variant", "metric", "mean difference [CI]", "bootstrap p", "permutation p"]
    return lines + markdown_table(head, rows)


def _chips(run: dict[str, Any]) -> bytes | None:
    cols, m = run["cols"], run["metrics"]
    perts = [v for v in m["variants"] if v != NULL]
    top_k = run["config"].robustness.retain_top_k or 10
    if not perts:
        return None
    var = perts[0]
    per_query = m["variants"][var]["per_query"]
    qid = min(per_query, key=lambda q: per_query[q].get("jaccard_topk", 1.0))
    mask = cols["qid"] == qid
    null = mask & (cols["variant"] == NULL) & (cols["presentation"] == 0)
    shuf = mask & (cols["variant"] == var) & (cols["presentation"] == 0)
    n = int(null.sum())
    grades = cols["grade"][null]
    scores = [cols["score"][null], cols["score"][shuf]]
    slot_keys = [
        cols["slot"][null] + 1000 * cols["chunk"][null],
        cols["slot"][shuf] + 1000 * cols["chunk"][shuf],
    ]
    orders = [np.argsort(k, kind="stable") for k in slot_keys]
    keep = [
        cast(
            "frozenset[int]",
            retained_set(s, list(range(n)), top_k=top_k, tiebreak=np.arange(n)),
        )
        for s in scores
    ]
    fig = figures.chips_figure(
        [str(d) for d in cols["docid"][null]],
        orders,
        keep,
        ["given order", f"{var} #1"],
        grades,
        f"{run['label']}, query {qid}: top-{top_k} retained in two presentations",
    )
    return figures._png(fig)


def slot_series(runs: Sequence[dict[str, Any]]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``{"label / variant": (slots, mean score at each slot)}`` of every perturbed variant."""
    series = {}
    for r in runs:
        cols = r["cols"]
        for var in r["metrics"]["variants"]:
            if var == NULL:
                continue
            mask = cols["variant"] == var
            slots = cols["slot"][mask]
            uniq = np.unique(slots)
            series[f"{r['label']} / {var}"] = (
                uniq,
                np.array([cols["score"][mask][slots == s].mean() for s in uniq]),
            )
    return series


def slot_axis_label(runs: Sequence[dict[str, Any]]) -> str:
    """The slot plot's y-axis: "expected grade" only when every run's scores are expected grades."""
    return "mean score (expected grade)" if all(r["grades"] for r in runs) else "mean score"


def write_report(
    run_dirs: Sequence[str | Path],
    out_dir: str | Path,
    *,
    seed: int = 0,
    labels: Sequence[str] | None = None,
) -> tuple[Path, Path]:
    """Write ``report.md``, ``report.html`` and the PNGs into ``out_dir``.

    Each run folder is labelled by its name, or by ``labels`` (one per folder): see
    :func:`run_labels`.
    """
    dirs = [Path(d) for d in run_dirs]
    runs = [load_psi_run(d, label) for d, label in zip(dirs, run_labels(dirs, labels), strict=True)]
    out = Path(out_dir)
    pngs = _figures(runs)
    for name, data in pngs.items():
        atomic_write_bytes(out / name, data)
    md = _markdown(runs, seed, pngs)
    atomic_write_text(out / "report.md", "\n".join(md))
    atomic_write_text(out / "report.html", _html(md, pngs))
    return out / "report.md", out / "report.html"


def _figures(runs: Sequence[dict[str, Any]]) -> dict[str, bytes]:
    """The report's PNGs by file name: τ-PSI bars, mean score by slot, and the first run's
    presentations of one query (when it has a perturbed variant)."""
    bars = []
    for r in runs:
        for var, block in r["metrics"]["variants"].items():
            bars.append(
                {
                    "label": f"{r['label']}\n{var}",
                    "null": var == NULL,
                    **block["summary"]["tau_psi"],
                }
            )
    pngs = {
        "tau_psi.png": figures._png(figures.tau_psi_figure(bars)),
        "slot_means.png": figures.mean_grade_by_slot(slot_series(runs), slot_axis_label(runs)),
    }
    chips = _chips(runs[0])
    if chips is not None:
        pngs["presentations.png"] = chips
    return pngs


def _markdown(runs: Sequence[dict[str, Any]], seed: int, pngs: dict[str, bytes]) -> list[str]:
    """``report.md``'s lines: the runs, the table, the paired tests and the figures."""
    md = [
        "# Order-instability report",
        "",
        "Run folders: " + ", ".join(f"`{r['label']}` = `{r['dir']}` ({r['system']})" for r in runs),
        "",
        "Means over queries with 95% seeded bootstrap intervals; `same_order` is the null "
        "(the given order scored again). nDCG in the given order and as the mean over shuffled "
        "presentations are reported apart (docs/EVAL-PROTOCOL.md).",
        "",
        *_table(runs),
        *_paired(runs, seed),
        "",
    ]
    captions = {
        "presentations.png": "Figure 1: the same candidates in two presentations",
        "tau_psi.png": "τ-PSI per run and variant, the null beside",
        "slot_means.png": "Mean score by slot",
    }
    for name in ("presentations.png", "tau_psi.png", "slot_means.png"):
        if name in pngs:
            md += [f"## {captions[name]}", "", f"![{captions[name]}]({name})", ""]
    return md


def _html(md: Sequence[str], pngs: dict[str, bytes]) -> str:
    """``report.html``: the Markdown lines as HTML, the PNGs inlined."""
    body = []
    for line in md:
        if line.startswith("![") and "](" in line:
            name = line.split("](")[1].rstrip(")")
            b64 = base64.b64encode(pngs[name]).decode()
            body.append(f'<img alt="{html.escape(name)}" src="data:image/png;base64,{b64}">')
        elif line.startswith("# ") or line.startswith("## "):
            level = 1 if line.startswith("# ") else 2
            body.append(f"<h{level}>{html.escape(line.lstrip('# '))}</h{level}>")
        elif line.startswith("|"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            if set("".join(cells)) <= {"-"}:
                continue
            body.append("<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in cells) + "</tr>")
        elif line:
            body.append(f"<p>{_inline(line)}</p>")
    page = (
        "<!doctype html><html><head><meta charset='utf-8'><title>Order-instability report"
        "</title><style>body{font-family:sans-serif;max-width:1200px;margin:auto}"
        "td{border:1px solid #ccc;padding:2px 6px;font-size:13px}"
        "table{border-collapse:collapse}</style></head><body>"
    )
    return page + _wrap_tables(body) + "</body></html>\n"


def _inline(text: str) -> str:
    """Escape, then render Markdown code spans as <code>."""
    parts = html.escape(text).split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))


def _wrap_tables(parts: list[str]) -> str:
    out, in_table = [], False
    for p in parts:
        if p.startswith("<tr>") and not in_table:
            out.append("<table>")
            in_table = True
        if not p.startswith("<tr>") and in_table:
            out.append("</table>")
            in_table = False
        out.append(p)
    if in_table:
        out.append("</table>")
    return "\n".join(out)
