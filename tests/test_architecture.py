"""docs/ARCHITECTURE.md's extension paths, taken by a throwaway reranker and a throwaway metric.

The reranker below is everything a new reranker is: one class, its options dataclass and one
registration. Nothing else in the package is edited, yet the config block validates its
options, ``build_reranker`` builds it, the contract suite passes it and ``score_presentations``
(the runners' path) scores it. The metric is one pure function plus one entry in the per-query
metric table, and ``psi_metrics.json`` summarises it with no second list to edit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
import yaml

import tests.rerankers.test_contract as contract  # a module, so its class is not collected here
from presentation_dependence.config import (
    RerankerConfig,
    RobustnessConfig,
    load_experiment_config,
)
from presentation_dependence.errors import ConfigError
from presentation_dependence.metrics.order import tau_psi
from presentation_dependence.presentations import draw_presentations, score_presentations
from presentation_dependence.records import Candidate, Query, RankResult
from presentation_dependence.rerankers import RERANKERS, Paradigm, RerankerOptions, build_reranker
from presentation_dependence.robustness import analysis
from presentation_dependence.robustness.store import NULL

NAME = "WordOverlapReranker"


@dataclass(frozen=True)
class WordOverlapOptions(RerankerOptions):
    scale: float = field(default=3.0, metadata={"help": "score of a candidate with every word"})


class WordOverlapReranker:
    """Scores a candidate by the share of query words it contains, times ``scale``."""

    paradigm: ClassVar[Paradigm] = Paradigm.POINTWISE
    config_cls: ClassVar[type[RerankerOptions]] = WordOverlapOptions

    def __init__(self, options: RerankerOptions | None = None) -> None:
        self.options = options if isinstance(options, WordOverlapOptions) else WordOverlapOptions()

    def rank(self, query: Query, candidates: Sequence[Candidate]) -> RankResult:
        words = set(query.text.split())
        scores = [
            self.options.scale * len(words & set(c.text.split())) / max(1, len(words))
            for c in candidates
        ]
        return RankResult.from_scores(query, candidates, scores)

    def describe(self) -> dict[str, Any]:
        return {"reranker_class": NAME, "scale": self.options.scale}


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    """``@RERANKERS.register()`` applied to the class, undone after the test so the throwaway
    never reaches the schema doc or the model catalogue another test compares."""
    monkeypatch.setattr(RERANKERS, "_items", dict(RERANKERS._items))
    RERANKERS.register()(WordOverlapReranker)


def test_a_config_block_builds_the_new_reranker(registered: None, tmp_path: Path) -> None:
    path = tmp_path / "overlap.yaml"
    path.write_text(yaml.safe_dump({"reranker": {"reranker_class": NAME, "scale": 2.0}}))
    block = load_experiment_config(path).reranker
    assert block.options == WordOverlapOptions(scale=2.0)
    reranker = build_reranker(block.reranker_class, block.options)
    assert isinstance(reranker, WordOverlapReranker) and reranker.describe()["scale"] == 2.0
    with pytest.raises(ConfigError, match="scale"):  # its options are validated like any other
        RerankerConfig.from_raw({"reranker_class": NAME, "scael": 2.0})


@pytest.mark.parametrize(
    "check", sorted(m for m in vars(contract.TestRerankerContract) if m.startswith("test_"))
)
def test_the_contract_suite_accepts_the_new_reranker(registered: None, check: str) -> None:
    """Every check of tests/rerankers/test_contract.py (those for other paradigms skip)."""
    getattr(contract.TestRerankerContract(), check)(NAME, tiny_model="unused: no model")


def test_score_presentations_runs_the_new_reranker(registered: None) -> None:
    reranker, query = build_reranker(NAME), Query("q-arch", "flea blood host cat")
    cands = contract.make_candidates()
    perms = draw_presentations("random_shuffle", len(cands), 4, 0, query.qid)
    ps = score_presentations(reranker, query, cands, perms)
    given = [it.score for it in reranker.rank(query, cands).items]
    assert len(set(given)) > 1
    assert ps.scores.shape == (4, len(cands))
    assert (ps.scores == np.array(given)).all()  # realigned by candidate; pointwise: order-free
    assert ps.slots is None and (ps.forward_passes == 0).all()
    assert tau_psi(ps.scores) == 0.0


def top_gap(scores: np.ndarray) -> float:
    """The throwaway metric: mean over presentations of (best - second-best score)."""
    top2 = np.sort(scores, axis=1)[:, -2:]
    return float((top2[:, 1] - top2[:, 0]).mean())


def test_a_new_metric_is_one_table_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    """The per-query metric table is the dict ``robustness.analysis.query_metrics`` returns (no
    registry): adding ``top_gap`` there is all ``psi_metrics.json`` needs to summarise it."""
    table_entry = analysis.query_metrics

    def with_top_gap(scores: np.ndarray, *args: Any) -> dict[str, float]:
        return {**table_entry(scores, *args), "top_gap": top_gap(scores)}

    monkeypatch.setattr(analysis, "query_metrics", with_top_gap)
    rng = np.random.default_rng(0)
    grades = np.array([2.0, 0.0, 1.0, 0.0, 3.0])
    table = {
        f"q{i}": {
            NULL: np.tile(rng.random(5), (3, 1)),
            "__grades__": grades,
            "__ideal__": np.sort(grades)[::-1],
            f"__slots__:{NULL}": np.tile(np.arange(1, 6), (3, 1)),
        }
        for i in range(4)
    }
    out = analysis.analyse(table, RobustnessConfig(ndcg_k=3, bootstrap_resamples=100), seed=0)
    variant = out["variants"][NULL]
    assert {"top_gap", "tau_psi"} <= set(variant["summary"])
    assert variant["per_query"]["q0"]["top_gap"] == top_gap(table["q0"][NULL])


def test_every_module_of_the_rerankers_package_is_imported_and_registers() -> None:
    """A built-in reranker is one module: the package imports each one (no list to edit)."""
    import pkgutil
    import sys

    import presentation_dependence.rerankers as pkg

    modules = {m.name for m in pkgutil.iter_modules(pkg.__path__)}
    assert {"grade", "gold", "identity"} <= modules
    assert all(f"{pkg.__name__}.{m}" in sys.modules for m in modules)
    homes = {RERANKERS.get(n).__module__.rsplit(".", 1)[-1] for n in RERANKERS.names()}
    assert {"gold", "identity", "self_consistency"} <= homes


def test_a_reranker_installed_as_an_entry_point_is_found_by_name(tmp_path: Path, monkeypatch):
    """A plugin distribution declares its reranker under the packaging entry-point group
    ``presentation_dependence.rerankers`` (PyTerrier's way); a config names it with no
    ``plugins:`` list. A plugin that fails to import is named when a lookup then misses."""
    site = tmp_path / "site"
    (site / "echo_plugin").mkdir(parents=True)
    (site / "echo_plugin" / "__init__.py").write_text(
        "from presentation_dependence.rerankers import RerankerOptions\n"
        "from presentation_dependence.rerankers.identity import IdentityReranker\n"
        "class EchoReranker(IdentityReranker):\n"
        "    config_cls = RerankerOptions\n"
    )
    info = site / "echo_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: echo-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[presentation_dependence.rerankers]\n"
        "EchoReranker = echo_plugin:EchoReranker\n"
        "BrokenReranker = echo_plugin_missing:Nope\n"
    )
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setattr(RERANKERS, "_items", dict(RERANKERS._items))  # undone after the test
    monkeypatch.setattr(RERANKERS, "_loaded", set())
    monkeypatch.setattr(RERANKERS, "_failed", [])
    assert "EchoReranker" in RERANKERS.names()
    cfg = tmp_path / "echo.yaml"
    cfg.write_text(
        yaml.safe_dump(
            {
                "reranker": {"reranker_class": "EchoReranker"},
                "data": {"path": str(Path("fixtures/noveleval/noveleval.jsonl").resolve())},
            }
        )
    )
    assert load_experiment_config(cfg, environ={}).reranker.reranker_class == "EchoReranker"
    with pytest.raises(ConfigError, match=r"BrokenReranker \(echo-plugin: ModuleNotFoundError"):
        load_experiment_config(_named(tmp_path, "Nope"), environ={})


def _named(folder: Path, name: str) -> Path:
    path = folder / f"{name.lower()}.yaml"
    path.write_text(yaml.safe_dump({"reranker": {"reranker_class": name}}))
    return path
