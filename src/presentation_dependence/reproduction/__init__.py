"""Reproduction: populations of collections, data plans, task pipelines, the appendix map, results.

* :mod:`.populations` - ``configs/reproduction/populations/*.yaml``: collections, sources, licences,
  declared first stages, what each needs (network, Java, gated access, manual steps);
* :mod:`.plan` / :mod:`.materialise` - what this machine can materialise now, and doing it;
* :mod:`.tasks` - task pipelines, their jobs, generated configs and stages (a stage's
  commands and their runner: :mod:`presentation_dependence.studies.stages`);
* :mod:`.appendix` - ``configs/reproduction/appendix.yaml`` and its readiness audit;
* :mod:`.results_index` - ``docs/results_index.yaml`` and ``record_result``.

The command-line entry points are ``scripts/setup_reproduction_data.py``, ``scripts/study.py`` and
``scripts/record_result.py``.
"""
