"""Response ranking and judge reliability (docs/JUDGE.md).

One judgement, stage by stage, bottom to top; each stage imports only the stages listed before
it (``a | b``: neither imports the other), which ``poe lint`` checks (the judge ``layers``
contract in pyproject.toml):

1. :mod:`.items`: frozen records (:mod:`.items.records`), response sets (:mod:`.items.loaders`,
   reading their fields strictly with :mod:`.items.item_fields`);
2. :mod:`.placement` | :mod:`.parser`: where each response sits (seeded placements and full
   sweeps, drawn from (seed, item id)), and the strict ``[[A]]``.. parser with
   ``verdict_record``, which turns a judgement into its record;
3. :mod:`.judges`: the interface, registry and identity (:mod:`.judges.base`), the generative
   judge (:mod:`.judges.generative` with :mod:`.judges.generation`), P(verdict) in one pass
   (:mod:`.judges.readout`), the generative judge against a server (:mod:`.judges.api`), known
   noise (:mod:`.judges.scripted`); each prompts, calls and parses with stage 2's parser;
4. :mod:`.sweep`: the calls of a run (the resumable sweep; the reruns of ``presdep noise``);
5. :mod:`.scoring`: records in, figures out (:mod:`.scoring.summary`, :mod:`.scoring.paired`,
   :mod:`.scoring.noise`), with what it takes from the config resolved once into
   :class:`~.scoring.settings.ScoringSettings`;
6. :mod:`.report` | :mod:`.gate` | :mod:`.ranking`: the Markdown tables, the noise-aware gate,
   and response ranking with the readout (``task: rank``);
7. :mod:`.config`: a judge task's config (each block's dataclass beside its stage: the data
   block in :mod:`.items.loaders`, the judge's options in its module, the gate's in
   :mod:`.gate`);
8. :mod:`.runner`: ``presdep judge | noise | gate`` end to end;

The judge study (its runner, run folders read back, tables, cost plan and docs) is in
:mod:`presentation_dependence.studies` (``judge_run``, ``judge_study``, ``judge_tables``,
``judge_plan``, ``judge_docs``).

The pure statistics (Wilson interval, exact McNemar test, rerun noise in SE units) are in
:mod:`presentation_dependence.metrics`. Importing the package registers the built-in judges
(``transformers``, ``readout``, ``openai-completions``, ``scripted``).
"""

from presentation_dependence.judge.items.records import JudgeRecord, JudgeRequest, ResponseItem
from presentation_dependence.judge.judges import (  # noqa: F401  (registers)
    api,
    generative,
    readout,
    reward,
    scripted,
)
from presentation_dependence.judge.judges.base import JUDGES, Judge, JudgeIdentity, build_judge
from presentation_dependence.judge.parser import parse_verdict
from presentation_dependence.judge.placement import make_requests, placements

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
