"""Student training on the tiny random model (peft needed; seconds per test).

Covers the issue's list: one step changes only LoRA parameters; the consistency term is exactly
zero for two identical views and positive otherwise; the loss falls when overfitting a handful of
queries; padding slots contribute nothing; a saved adapter reloads and scores identically; the
four committed variants train from their configs and their adapters score through the
ExperimentManager.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path

import numpy as np
import pytest
import yaml

pytest.importorskip("peft")

import torch

from presentation_dependence.config.experiment import config_from_raw
from presentation_dependence.errors import ConfigError
from presentation_dependence.records import Query
from presentation_dependence.rerankers.grade import (
    GradeReranker,
    GradeRerankerOptions,
    clear_model_cache,
)
from presentation_dependence.runners import ExperimentManager
from presentation_dependence.training.collate import ReadoutCollator, TrainExample
from presentation_dependence.training.config import (
    LoraOptions,
    load_training_config,
)
from presentation_dependence.training.loss import readout_loss
from presentation_dependence.training.model import load_student, student_readout
from presentation_dependence.training.resume import train_record
from presentation_dependence.training.silver import SilverSet
from presentation_dependence.training.splits import SplitOverlapError
from presentation_dependence.training.trainer import train_student
from tests.training.conftest import grade_block, noveleval_block, student_cfg

CONFIGS = Path(__file__).resolve().parents[2] / "configs" / "self-distill"


make_cfg = student_cfg


def example(q, views) -> TrainExample:
    return TrainExample(
        q.key, q.query, tuple(c.text for c in q.candidates), q.labels(1), np.asarray(views)
    )


@pytest.fixture(scope="module")
def student(tiny_model):
    s = load_student(
        GradeRerankerOptions(
            **{k: v for k, v in grade_block(tiny_model).items() if k != "reranker_class"}
        ),
        LoraOptions(r=4, alpha=8),
    )
    s.model.eval()
    return s


def test_one_step_changes_only_lora_parameters(tiny_model, silver_file, silver, tmp_path):
    cfg = make_cfg(tiny_model, silver_file, tmp_path / "s", train={"max_steps": 1})
    opts = cfg.student_options
    st = load_student(opts, cfg.lora)
    before = {n: p.detach().clone() for n, p in st.model.named_parameters()}
    trainable = {n for n, p in st.model.named_parameters() if p.requires_grad}
    assert trainable and all("lora_" in n for n in trainable)
    out = train_student(cfg, silver=silver, student=st)
    assert out.global_step == 1
    changed = {n for n, p in st.model.named_parameters() if not torch.equal(p.detach(), before[n])}
    assert changed, "the step changed nothing"
    assert changed <= trainable, f"non-LoRA parameters changed: {sorted(changed - trainable)[:3]}"


def test_every_epoch_draws_fresh_views(tiny_model, silver_file, silver, tmp_path):
    cfg = make_cfg(tiny_model, silver_file, tmp_path / "ep", train={"max_steps": None, "epochs": 2})
    out = train_student(cfg, silver=silver)
    assert out.global_step == 2 * len(silver.queries)
    assert out.trainer.train_dataset.epoch == 1


def test_consistency_is_exactly_zero_for_identical_views(student, silver):
    q = silver.queries[0]
    n = len(q.candidates)
    collate = ReadoutCollator(student.builder, student.pad_token_id)
    order = list(range(n))[::-1]
    with torch.no_grad():
        same = student_readout(
            student.model, collate([example(q, [order, order])]), student.grade_token_ids
        ).scores
        diff = student_readout(
            student.model, collate([example(q, [order, list(range(n))])]), student.grade_token_ids
        ).scores
    mask = torch.ones(1, n, dtype=torch.bool)
    target = torch.as_tensor(q.labels(1), dtype=torch.float32)[None]
    assert readout_loss(same, target, mask, 1.0).consistency.item() == 0.0
    assert readout_loss(diff, target, mask, 1.0).consistency.item() > 1e-6


def test_padding_slots_contribute_nothing(student, silver):
    long_q, short_q = silver.queries[0], silver.queries[1]
    short = dataclasses.replace(
        short_q,
        candidates=short_q.candidates[:2],
        presentations=short_q.presentations[:, :2] % 2,
        order_scores=short_q.order_scores[:, :2],
    )
    collate = ReadoutCollator(student.builder, student.pad_token_id)
    ex_long = example(long_q, [[0, 1, 2, 3, 4], [4, 2, 0, 1, 3]])
    ex_short = example(short, [[1, 0], [0, 1]])

    def loss(examples):
        batch = collate(examples)
        with torch.no_grad():
            scores = student_readout(student.model, batch, student.grade_token_ids).scores
        return scores, readout_loss(
            scores, batch["teacher_scores"], batch["candidate_mask"], 1.0
        ).total.item()

    both_scores, both = loss([ex_long, ex_short])
    _, alone_long = loss([ex_long])
    short_scores, alone_short = loss([ex_short])
    assert both == pytest.approx((alone_long + alone_short) / 2, abs=1e-5)
    assert (both_scores[1, :, 2:] == 0).all()
    torch.testing.assert_close(both_scores[1, :, :2], short_scores[0], atol=1e-5, rtol=0)


@pytest.mark.slow
def test_loss_falls_when_overfitting_a_handful_of_queries(
    tiny_model, silver_file, silver, tmp_path
):
    # Targets far from the teacher: 3 for the first candidate, 0 for the others.
    queries = []
    for q in silver.queries:
        target = np.zeros_like(q.order_scores)
        target[:, 0] = 3.0
        queries.append(dataclasses.replace(q, order_scores=target))
    fake = SilverSet(silver.headers, tuple(queries))
    cfg = make_cfg(
        tiny_model,
        silver_file,
        tmp_path / "overfit",
        variant="single_order",
        views=1,
        lambda_=0.0,
        view_orders="teacher",
        train={"max_steps": 16, "learning_rate": 2e-2, "logging_steps": 1},
    )
    out = train_student(cfg, silver=fake)
    losses = [h["loss"] for h in out.log_history if "loss" in h]
    assert len(losses) == 16
    assert np.mean(losses[-3:]) < 0.5 * np.mean(losses[:3]), losses


def test_saved_adapter_reloads_and_scores_identically(
    tiny_model, silver_file, silver, tmp_path, caplog
):
    cfg = make_cfg(tiny_model, silver_file, tmp_path / "saved")
    with caplog.at_level(logging.INFO, logger="presentation_dependence"):
        out = train_student(cfg, silver=silver)
    assert {p.name for p in out.adapter_dir.iterdir()} >= {
        "adapter_config.json",
        "adapter_model.safetensors",
    }
    for name in ("resolved_config.yaml", "reranker.yaml", "provenance.json", "run.log"):
        assert (out.output_dir / name).is_file()
    invocations = json.loads((out.output_dir / "provenance.json").read_text())["invocations"]
    prov = train_record(out.output_dir)
    assert invocations == [prov]  # the run folder's form: one record per training invocation
    assert "saved the student to" in (out.output_dir / "run.log").read_text()
    assert prov["variant"] == "oc_sft" and prov["lambda"] == 1.0 and prov["global_step"] == 2
    assert prov["student"]["parameters"]["trainable"] > 0 and "packages" in prov
    block = yaml.safe_load((out.output_dir / "reranker.yaml").read_text())
    assert block["adapter_path"] == str(out.adapter_dir)

    q = silver.queries[2]
    model = out.student.model.eval()
    collate = ReadoutCollator(out.student.builder, out.student.pad_token_id)
    with torch.no_grad():
        trained = student_readout(
            model,
            collate([example(q, [list(range(len(q.candidates)))])]),
            out.student.grade_token_ids,
        ).scores[0, 0]
    opts = GradeRerankerOptions(**{**{k: v for k, v in block.items() if k != "reranker_class"}})
    clear_model_cache()
    served = [
        it.score for it in GradeReranker(opts).rank(Query(q.qid, q.query), list(q.candidates)).items
    ]
    np.testing.assert_allclose(served, trained.double().numpy(), atol=1e-6, rtol=0)
    clear_model_cache()
    again = [
        it.score for it in GradeReranker(opts).rank(Query(q.qid, q.query), list(q.candidates)).items
    ]
    assert again == served
    desc = GradeReranker(opts).describe()
    assert desc["adapter_merged"] is False and len(desc["adapter_sha256"]) == 64
    base = GradeReranker(dataclasses.replace(opts, adapter_path=None))
    assert [it.score for it in base.rank(Query(q.qid, q.query), list(q.candidates)).items] != served


def test_training_refuses_test_queries(tiny_model, silver_file, silver, tmp_path):
    cfg = make_cfg(
        tiny_model,
        silver_file,
        tmp_path / "x",
        splits={"test": [dataclasses.asdict(noveleval_block(1, 5))]},
    )
    with pytest.raises(SplitOverlapError, match="noveleval/0"):
        train_student(cfg, silver=silver)


@pytest.mark.slow
@pytest.mark.parametrize("stem", ["single-order", "order-averaged", "perm-aug", "oc-sft"])
def test_committed_variants_train_and_serve_through_the_runner(
    stem, tiny_model, silver_file, tmp_path
):
    flow = lambda d: yaml.safe_dump(d, default_flow_style=True, width=10_000).strip()  # noqa: E731
    overrides = [
        f"student={flow(grade_block(tiny_model))}",
        f"silver.path={silver_file}",
        "silver.num_orders=3",
        f"silver.teacher={flow(grade_block(tiny_model))}",
        f"silver.data=[{flow(dataclasses.asdict(noveleval_block(3, 5)))}]",
        "splits.test=[]",
        "splits.heldout=[]",
        "train.max_steps=2",
        "lora.r=4",
        f"output_dir={tmp_path / stem}",
    ]
    if stem == "order-averaged":
        overrides.append("teacher_orders=3")
    cfg = load_training_config(CONFIGS / f"{stem}.yaml", overrides)
    out = train_student(cfg)
    assert out.global_step == 2 and np.isfinite(out.train_loss)
    exp = config_from_raw(
        {
            "reranker": {**grade_block(tiny_model), "adapter_path": str(out.adapter_dir)},
            "data": {
                "dataloader_class": "FixtureLoader",
                "path": "fixtures/noveleval/noveleval.jsonl",
                "top_k": 5,
                "max_queries": 2,
            },
        },
        f"student-{stem}",
    )
    summary = ExperimentManager(exp, tmp_path / "run").run()
    assert summary.complete and (summary.run_dir / "run.trec").is_file()
    prov = json.loads((summary.run_dir / "provenance.json").read_text())
    rer = prov["invocations"][0]["reranker"]
    assert rer["adapter_path"] == str(out.adapter_dir.resolve()) and rer["adapter_sha256"]


def test_adapter_path_errors(tmp_path):
    from presentation_dependence.readout.adapter import resolve_adapter

    (tmp_path / "adapter").mkdir()
    (tmp_path / "adapter" / "adapter_config.json").write_text("{}")
    (tmp_path / "adapter" / "adapter_model.safetensors").write_bytes(b"")
    with pytest.raises(ConfigError, match="Did you mean"):
        resolve_adapter(tmp_path)
    assert resolve_adapter(tmp_path / "adapter") == tmp_path / "adapter"
    with pytest.raises(ConfigError, match="adapter_path"):
        GradeRerankerOptions(adapter_path="")
