"""The smoke fixture and its independent check (including that the check can fail)."""

from __future__ import annotations

import json
from pathlib import Path

from presentation_dependence.cli import main as cli_main
from presentation_dependence.data.smoke import (
    build_smoke_fixture,
    check_smoke_metrics,
    expected_ndcg_at_10,
)


def test_fixture_is_deterministic_and_imperfect(tmp_path):
    a = build_smoke_fixture(tmp_path / "a").read_bytes()
    b = build_smoke_fixture(tmp_path / "b").read_bytes()
    assert a == b
    rows = [json.loads(line) for line in a.decode().splitlines()]
    ndcgs = []
    for row in rows:
        ranked = sorted(row["candidates"], key=lambda c: c["rank"])
        ndcgs.append(
            expected_ndcg_at_10(
                [row["qrels"][c["docid"]] for c in ranked], list(row["qrels"].values())
            )
        )
    assert min(ndcgs) < 1.0, "the first stage must be imperfect for the smoke check to mean much"


def test_expected_ndcg_hand_case():
    assert expected_ndcg_at_10([3, 2, 1], [3, 2, 1]) == 1.0
    assert expected_ndcg_at_10([0, 0], [1]) == 0.0


def test_smoke_path_end_to_end_and_check_has_teeth(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    repo = Path(__file__).resolve().parents[2]
    fixture = build_smoke_fixture(tmp_path / "data" / "smoke")
    cfg = repo / "configs" / "experiments" / "_smoke-fixture.yaml"
    assert cli_main(["run", str(cfg), "--run-dir", "r", "--eval"]) == 0
    metrics = json.loads((tmp_path / "r" / "metrics.json").read_text())
    assert check_smoke_metrics(fixture, metrics) == []
    # A one-in-a-million change to one query's value must be caught.
    qid = next(iter(metrics["per_query"]))
    metrics["per_query"][qid]["ndcg@10"] += 1e-6
    assert any(qid in p for p in check_smoke_metrics(fixture, metrics))
