"""Response ranking and judge reliability (docs/JUDGE.md).

* :mod:`.loaders`: response sets (gsm8k-model-solutions, rm-bench, llmbar, hh-rlhf-harmless,
  generic JSONL; reward-bench-2 from the hub).
* :mod:`.placement`: seeded placements and full sweeps, drawn from (seed, item id).
* :mod:`.parser`: the strict ``[[A]]``.. verdict parser.
* :mod:`.generative`: the N-way generative judge (transformers, greedy); :mod:`.readout`: the
  verdict readout judge (one forward pass, P(verdict) over the N letters); :mod:`.scripted`: a
  judge with known accuracy and noise.
* :mod:`.scoring`, :mod:`.noise`, :mod:`.compare`, :mod:`.gate`, :mod:`.report`: the statistics,
  rerun noise, paired tests, the noise-aware gate and the Markdown tables.
* :mod:`.ranking`: response ranking with the expected-grade readout.
* :mod:`.study`: the tables and figure of a study of several sets x judges (docs/JUDGE.md).

Importing the package registers the built-in judges (``transformers``, ``readout``,
``scripted``).
"""

from presentation_dependence.judge import generative, readout, scripted  # noqa: F401  (registers)
from presentation_dependence.judge.base import JUDGES, Judge, JudgeIdentity, build_judge
from presentation_dependence.judge.parser import parse_verdict
from presentation_dependence.judge.placement import make_requests, placements
from presentation_dependence.judge.records import JudgeRecord, JudgeRequest, ResponseItem

__all__ = [
    "JUDGES",
    "Judge",
    "JudgeIdentity",
    "JudgeRecord",
    "JudgeRequest",
    "ResponseItem",
    "build_judge",
    "make_requests",
    "parse_verdict",
    "placements",
]
