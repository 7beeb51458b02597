"""Response ranking and judge reliability (docs/JUDGE.md).

One judgement, stage by stage; each module calls only those listed before it:

1. items: :mod:`.records` (frozen records), :mod:`.loaders` (response sets);
2. placements: :mod:`.placement` (seeded placements and full sweeps, drawn from (seed, item id));
3. prompt and judge call: :mod:`.base` (interface, registry, identity), :mod:`.generative` (with
   :mod:`.generation`), :mod:`.readout` (P(verdict) in one pass), :mod:`.api` (the generative
   judge against a server), :mod:`.scripted` (known noise);
4. parse -> record: :mod:`.parser` (the strict ``[[A]]``.. parser and ``verdict_record``);
5. the calls of a run: :mod:`.sweep` (the resumable sweep; the reruns of ``presdep noise``);
6. score: :mod:`.scoring` (summary, paired tests, rerun-noise figures);
7. report and gate: :mod:`.report`, :mod:`.gate`; on top :mod:`.runner` (``presdep judge | noise |
   gate``). Beside the chain: :mod:`.ranking` (response ranking with the readout).

The judge study (its runner, run folders read back, tables, cost plan and docs) is in
:mod:`presentation_dependence.studies` (``judge_run``, ``judge_study``, ``judge_tables``,
``judge_plan``, ``judge_docs``).

Importing the package registers the built-in judges (``transformers``, ``readout``,
``openai-completions``, ``scripted``).
"""

from presentation_dependence.judge import api, generative, readout, scripted  # noqa: F401  (registers)
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
