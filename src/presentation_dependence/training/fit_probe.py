"""Can the student fit at all? A small, measured training probe (docs/studies/fit-diagnosis.md).

A probe trains the student on a handful of queries with the very pieces the trainer uses
(:class:`~presentation_dependence.training.collate.ReadoutCollator`,
:func:`~presentation_dependence.training.model.student_readout`,
:func:`~presentation_dependence.training.loss.readout_loss`, the student of
:func:`~presentation_dependence.training.model.load_student`) in a plain AdamW loop with
constant learning rate and gradient clipping at 1, and measures every ``eval_every`` steps:

* on the training queries, under one fixed *fresh* shuffle (seed ``eval_seed``; in the given
  order when the probe trains in the given order): the squared error of E[g] to the label
  (``mse``), nDCG@10 (labels as gains, ideal over the list) and the within-query score spread;
* the same on ``n_heldout`` held-out queries: what was learned beyond memorising.

Labels: ``gold`` = the qrels grade of the candidate scaled to 0–3 (``3 · grade / max_grade``);
``slot`` = ``slot mod 4`` of the slot the candidate is shown in (depends on the slot alone: a
training path that works learns it almost at once). ``views: fixed`` trains on the given
order every epoch, ``shuffle`` on a fresh seeded permutation per query and epoch (the
collate module's :func:`draw_views`). The ladder of docs/studies/fit-diagnosis.md is (a) slot labels,
(b) gold labels in a fixed order, (c) gold labels under shuffles, (d) held-out content.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch

from presentation_dependence.config.loader import load_config
from presentation_dependence.errors import ConfigError
from presentation_dependence.fields import build_dataclass
from presentation_dependence.io.atomic import atomic_write_text
from presentation_dependence.io.fixture import read_fixture
from presentation_dependence.io.markdown import markdown_table
from presentation_dependence.metrics.ranking import ndcg_at_k
from presentation_dependence.records import Qrels, RerankRequest
from presentation_dependence.rerankers.grade import GradeRerankerOptions
from presentation_dependence.training.collate import ReadoutCollator, TrainExample, draw_views
from presentation_dependence.training.config import EMBEDDED, LoraOptions
from presentation_dependence.training.loss import readout_loss
from presentation_dependence.training.model import load_student, student_readout

__all__ = ["ProbeConfig", "ladder_table", "load_ladder", "run_probe", "verdict"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ProbeConfig:
    """One probe: data, labels, layout, loss, adapter and optimisation."""

    name: str
    train_path: str
    heldout_path: str
    n_train: int = 16
    n_heldout: int = 16
    labels: Literal["gold", "slot"] = "gold"
    views: Literal["fixed", "shuffle"] = "shuffle"
    template: str = "pathc_grade_v1"
    max_passage_chars: int = 300
    fit: Literal["mse", "ce"] = "mse"
    rank_weight: float = 0.0
    finetune: Literal["lora", "full"] = "lora"
    r: int = 8
    target_modules: list[str] = field(
        default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj"]
    )
    dtype: str = "bfloat16"
    learning_rate: float = 5e-4
    steps: int = 64
    eval_every: int = 16
    eval_seed: int = 12345
    seed: int = 0
    model_name: str = EMBEDDED


def _labels(req: RerankRequest, qrels: Qrels, view: np.ndarray, kind: str) -> np.ndarray:
    n = len(req.candidates)
    if kind == "slot":
        out = np.zeros(n)
        out[view] = np.arange(n) % 4
        return out
    judged = qrels.judgements.get(req.query.qid, {})
    top = max([*judged.values(), 1])
    return np.array([3.0 * judged.get(c.docid, 0) / top for c in req.candidates])


def _example(req: RerankRequest, qrels: Qrels, view: np.ndarray, kind: str) -> TrainExample:
    return TrainExample(
        key=req.query.qid,
        query=req.query.text,
        texts=tuple(c.text for c in req.candidates),
        labels=_labels(req, qrels, view[0], kind),
        views=view,
    )


def _view(req: RerankRequest, seed: int, epoch: int, fixed: bool) -> np.ndarray:
    n = len(req.candidates)
    if fixed:
        return np.arange(n)[None]
    return draw_views(n, 1, seed=seed, key=req.query.qid, epoch=epoch)


@dataclass
class _Probe:
    """What one probe trains and measures: its config, student, collator, optimizer, the
    train and held-out queries with their judgements, and the record written to probe.json."""

    cfg: ProbeConfig
    out: Path
    student: Any
    collate: ReadoutCollator
    params: list[torch.nn.Parameter]
    optim: torch.optim.Optimizer
    splits: dict[str, tuple[list[Any], Any]]
    result: dict[str, Any]

    def save(self) -> None:
        atomic_write_text(self.out / "probe.json", json.dumps(self.result, indent=1) + "\n")


def run_probe(cfg: ProbeConfig, out_dir: str | Path) -> dict[str, Any]:
    """Train and measure ``cfg``; write ``<out_dir>/<name>/probe.json`` (after every eval)."""
    probe = _setup(cfg, Path(out_dir) / cfg.name)
    t0 = time.perf_counter()
    _evaluate(probe, 0)
    probe.student.model.train()
    train, train_qrels = probe.splits["train"]
    step = 0
    epoch = 0
    while step < cfg.steps:
        for req in train:
            if step >= cfg.steps:
                break
            view = _view(req, cfg.seed, epoch, fixed=cfg.views == "fixed")
            row = _train_step(probe, _example(req, train_qrels, view, cfg.labels))
            step += 1
            probe.result["steps"].append({"step": step, **row, "seconds": time.perf_counter() - t0})
            if step % cfg.eval_every == 0:
                _evaluate(probe, step)
        epoch += 1
    probe.result["seconds"] = time.perf_counter() - t0
    probe.save()
    return probe.result


def _setup(cfg: ProbeConfig, out: Path) -> _Probe:
    out.mkdir(parents=True, exist_ok=True)
    train_reqs, train_qrels = read_fixture(cfg.train_path)
    held_reqs, held_qrels = read_fixture(cfg.heldout_path)
    opts = GradeRerankerOptions(
        model_name=cfg.model_name,
        max_passage_chars=cfg.max_passage_chars,
        dtype=cfg.dtype,
        template=cfg.template,
        device="cpu",
    )
    lora = LoraOptions(r=cfg.r, alpha=2 * cfg.r, target_modules=list(cfg.target_modules))
    student = load_student(opts, lora, seed=cfg.seed, finetune=cfg.finetune)
    params = [p for p in student.model.parameters() if p.requires_grad]
    torch.manual_seed(cfg.seed)
    optim = torch.optim.AdamW(params, lr=cfg.learning_rate, weight_decay=0.0)
    return _Probe(
        cfg=cfg,
        out=out,
        student=student,
        collate=ReadoutCollator(student.builder, student.pad_token_id),
        params=params,
        optim=optim,
        splits={
            "train": (list(train_reqs)[: cfg.n_train], train_qrels),
            "heldout": (list(held_reqs)[: cfg.n_heldout], held_qrels),
        },
        result={
            "config": asdict(cfg),
            "trainable_parameters": sum(p.numel() for p in params),
            "steps": [],
            "evals": [],
        },
    )


def _train_step(probe: _Probe, ex: Any) -> dict[str, float]:
    """One optimizer step on one query; its loss, squared error and gradient norm."""
    cfg, student = probe.cfg, probe.student
    batch = probe.collate([ex])
    ro = student_readout(student.model, batch, student.grade_token_ids)
    parts = readout_loss(
        ro.scores,
        batch["teacher_scores"],
        batch["candidate_mask"],
        log_probs=ro.log_probs,
        fit=cfg.fit,
        rank_weight=cfg.rank_weight,
    )
    parts.total.backward()
    grad_norm = torch.nn.utils.clip_grad_norm_(probe.params, 1.0)
    probe.optim.step()
    probe.optim.zero_grad()
    mse = float(((ro.scores.detach() - batch["teacher_scores"][:, None]) ** 2).mean())
    return {"loss": float(parts.total.detach()), "mse": mse, "grad_norm": float(grad_norm)}


def _evaluate(probe: _Probe, step: int) -> None:
    """Squared error, nDCG@10 and score spread on each split at ``step``; saves probe.json."""
    cfg, student = probe.cfg, probe.student
    student.model.eval()
    for split, (reqs, qrels) in probe.splits.items():
        mse, nd, spread = [], [], []
        with torch.no_grad():
            for req in reqs:
                view = _view(req, cfg.eval_seed, 0, fixed=cfg.views == "fixed")
                ex = _example(req, qrels, view, cfg.labels)
                ro = student_readout(student.model, probe.collate([ex]), student.grade_token_ids)
                s = ro.scores[0, 0].float().numpy()
                mse.append(float(((s - ex.labels) ** 2).mean()))
                nd.append(ndcg_at_k(s, ex.labels, k=10))
                spread.append(float(s.std()))
        row = {
            "step": step,
            "split": split,
            "mse": float(np.mean(mse)),
            "ndcg10": float(np.mean(nd)),
            "spread": float(np.mean(spread)),
            "num_queries": len(reqs),
        }
        probe.result["evals"].append(row)
        log.info(
            "%s step %d %s: mse %.3f nDCG@10 %.3f spread %.3f",
            cfg.name,
            step,
            split,
            row["mse"],
            row["ndcg10"],
            row["spread"],
        )
    student.model.train()
    probe.save()


def load_ladder(path: str | Path) -> dict[str, ProbeConfig]:
    """``{name: ProbeConfig}`` from a ladder YAML (``defaults`` + ``probes``), strictly."""

    def build(raw: dict[str, Any], stem: str) -> dict[str, ProbeConfig]:
        if set(raw) - {"defaults", "probes"}:
            raise ConfigError(f"expected the keys 'defaults' and 'probes', got {sorted(raw)}")
        defaults = raw.get("defaults") or {}
        out: dict[str, ProbeConfig] = {}
        for name, block in (raw.get("probes") or {}).items():
            try:
                out[name] = build_dataclass(
                    ProbeConfig, {**defaults, **(block or {}), "name": name}
                )
            except ConfigError as e:
                raise ConfigError(f"probe {name!r}: {e}", key=f"probes.{name}") from None
        return out

    return load_config(path, build, family="probes")


def constant_mse(cfg: ProbeConfig, split: str = "train") -> float:
    """The squared error of the best constant per query (its label mean): what "learning the
    mean, not the content" scores. Pure given the fixture file."""
    path = cfg.train_path if split == "train" else cfg.heldout_path
    n = cfg.n_train if split == "train" else cfg.n_heldout
    reqs, qrels = read_fixture(path)
    given = [_labels(r, qrels, np.arange(len(r.candidates)), cfg.labels) for r in list(reqs)[:n]]
    return float(np.mean([float(np.var(labels)) for labels in given]))


def verdict(first: dict[str, Any], last: dict[str, Any], const: float) -> str:
    """``collapsed``: the last held-out score spread is below 0.05 (every candidate the same
    score); ``fits``: the last training MSE is at most half the best constant's (``const``);
    ``learning``: at most 0.8 of it; else ``no better than a constant``."""
    if last.get("heldout", {}).get("spread", 1.0) < 0.05:
        return "collapsed"
    b = last.get("train", {}).get("mse")
    if b is None:
        return "–"
    if b <= 0.5 * const:
        return "fits"
    return "learning" if b <= 0.8 * const else "no better than a constant"


def ladder_table(results: list[dict[str, Any]]) -> str:
    """Markdown: one row per probe, its settings and the first and last measurements."""
    head = ["probe", "labels", "views", "layout", "fit", "adapter", "lr", "steps", "train MSE"]
    head += ["train nDCG@10", "held-out MSE", "held-out nDCG@10", "held-out spread", "s/step"]
    head += ["constant's train MSE", "verdict"]
    rows = []
    for r in results:
        c = r["config"]
        ev = r["evals"]
        first = {e["split"]: e for e in ev if e["step"] == 0}
        last_step = max(e["step"] for e in ev)
        last = {e["split"]: e for e in ev if e["step"] == last_step}
        adapter = (
            "full"
            if c["finetune"] == "full"
            else f"LoRA r{c['r']} {'all-linear' if len(c['target_modules']) == 7 else 'q/k/v/o'}"
        )
        layout = "interleaved" if "interleaved" in c["template"] else "trailing"
        const = constant_mse(ProbeConfig(**c))
        steps = r["steps"]
        per_step = steps[-1]["seconds"] / len(steps) if steps else float("nan")

        def pair(split: str, key: str, first: dict = first, last: dict = last) -> str:
            a, b = first.get(split, {}).get(key), last.get(split, {}).get(key)
            return "–" if a is None or b is None else f"{a:.3f} → {b:.3f}"

        rows.append(
            [
                c["name"],
                c["labels"],
                c["views"],
                layout,
                c["fit"],
                adapter,
                f"{c['learning_rate']:g}",
                last_step,
                pair("train", "mse"),
                pair("train", "ndcg10"),
                pair("heldout", "mse"),
                pair("heldout", "ndcg10"),
                pair("heldout", "spread"),
                f"{per_step:.1f}",
                f"{const:.3f}",
                verdict(first, last, const),
            ]
        )
    # no probe: the rule, then an empty line (as before the table had a renderer)
    return "\n".join(markdown_table(head, rows)) + ("\n" if rows else "\n\n")
