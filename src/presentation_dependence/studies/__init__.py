"""Studies: many runs in order, resumably, and the tables, curves and archives made of them.

Above the feature packages (training, judge, qa, interop) and reproduction, below the CLI
(``presdep study``); the features keep their own science, this package sequences and renders it.

* the sequencer: :mod:`.plan` (a plan's :class:`~.plan.Step` records, plan YAML, the built-in
  self-distillation plan), :mod:`.sequencer` (:func:`~.sequencer.run_steps`, the one
  sequencer, glibc's :data:`~.sequencer.ALLOCATOR_ENV`) and :mod:`.timing` (``steps.jsonl``,
  the one timing record of every study);
* its tables: :mod:`.table` (the self-distillation and content studies' table),
  :mod:`.collections_figures` and :mod:`.collections_table` (the multi-collection table),
  :mod:`.curve` (learning curves over checkpoints), :mod:`.archive` (run folders' summaries
  kept in git, which the tables render from again);
* the judge study: :mod:`.judge_run` (each config into its folder, resumably),
  :mod:`.judge_study` (its run folders read back),
  :mod:`.judge_tables` (its tables and figure), :mod:`.judge_plan` (its cost before it runs),
  :mod:`.judge_docs` (the docs/studies/judge-*.md blocks);
* the reproduction tasks' stages: :mod:`.stages` (a stage's commands as steps).
"""
