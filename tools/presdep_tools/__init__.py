"""Development tools of presentation_dependence that do not ship in its wheel.

* :mod:`presdep_tools.testing`: test helpers (the tiny random model, a loopback
  OpenAI-compatible chat server), used by the tests and the harness below;
* :mod:`presdep_tools.reliability`: the hostile-cases harness (``poe reliability`` writes
  docs/RELIABILITY.md);
* :mod:`presdep_tools.bench`: the benchmarks (``poe bench`` writes docs/results/bench-run.json and
  docs/BENCHMARKS.md).

They drive the package as a user would and import it; the package never imports them
(an import-linter contract in ``poe lint``). ``tools/`` is on the path of pytest
(``[tool.pytest.ini_options] pythonpath``) and of the poe tasks that use it.
"""
