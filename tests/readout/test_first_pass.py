"""Issue 38 (6): the first presentation a fresh process scores equals the same presentation
scored again after other passes, and the first pass of another fresh process (multi-threaded, in
the dtype ``auto`` scores in on this CPU: bfloat16 where the processor has it natively, the
setting where a first-call kernel or thread-pool choice could round differently; float32 on a
CPU that only emulates bfloat16, where a bfloat16 pass is several times slower).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from presentation_dependence.readout.speed import cpu_default_dtype

REPO = Path(__file__).resolve().parents[2]

SCRIPT = r"""
import json, sys
import torch
from presentation_dependence.fields import build_dataclass
from presentation_dependence.io.fixture import read_fixture
from presentation_dependence.presentations import draw_presentations, score_presentations
from presentation_dependence.rerankers import build_reranker
from presentation_dependence.rerankers.base import RERANKERS

model, threads, dtype = sys.argv[1], int(sys.argv[2]), sys.argv[3]
torch.set_num_threads(threads)
req = read_fixture("fixtures/noveleval/noveleval.jsonl")[0][0]
cands = req.candidates[:20]
raw = {"model_name": model, "dtype": dtype, "chunk_size": 20, "device": "cpu",
       "max_passage_chars": 600}
opts = build_dataclass(RERANKERS.get("GradeReranker").config_cls, raw)
rr = build_reranker("GradeReranker", opts)
perms = draw_presentations("random_shuffle", len(cands), 4, 0, req.query.qid)
first = score_presentations(rr, req.query, cands, perms[:1]).scores[0]
later = score_presentations(rr, req.query, cands, perms[::-1]).scores[-1]
again = score_presentations(rr, req.query, cands, perms[:1]).scores[0]
print(json.dumps({"threads": torch.get_num_threads(),
                  "first": first.tobytes().hex(), "later": later.tobytes().hex(),
                  "again": again.tobytes().hex()}))
"""


def _fresh_process(model: str, threads: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, model, str(threads), cpu_default_dtype()],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _check(model: str, threads: int) -> None:
    a, b = _fresh_process(model, threads), _fresh_process(model, threads)
    assert a["threads"] == threads
    assert a["first"] == a["later"] == a["again"]  # the first pass of the process = later ones
    assert a == b  # and = another fresh process's


@pytest.mark.slow
def test_first_pass_of_a_fresh_process_equals_later_passes_tiny(tiny_model: str) -> None:
    _check(tiny_model, threads=2)


@pytest.mark.integration
@pytest.mark.slow
def test_first_pass_of_a_fresh_process_equals_later_passes_embedded() -> None:
    _check("embedded:smollm2-135m-instruct", threads=2)
