"""The score stage of a judge run: everything computed from records; nothing is judged here.

What it takes from a task's config is resolved once, at the start, into
:class:`~.settings.ScoringSettings` (seed, bootstrap resamples, confidence). Three parts: one
run's summary (:mod:`.summary`: :func:`~.summary.summarise_records`), the paired comparison of
two runs or judges (:mod:`.paired`: :func:`~.paired.compare_runs`), and rerun noise
(:mod:`.noise`: :func:`~.noise.compare_reruns`, :func:`~.noise.summarise_noise`). The
statistics that know nothing of judges (Wilson interval, exact McNemar test, rerun noise in SE
units) are in :mod:`presentation_dependence.metrics`.
"""
