"""Multi-document QA with a frozen reader: retained paragraphs, answers, answer flips.

``presdep qa CONFIG --run-dir DIR`` (:mod:`presentation_dependence.qa.runner`) scores each
question's paragraphs under the presentations of the ``robustness`` block, keeps the top-k (or a
score threshold), lets a frozen generative reader (:mod:`~presentation_dependence.qa.reader`)
answer from them and from all paragraphs (the control), and measures EM/F1 and answer flips
(:mod:`~presentation_dependence.qa.analysis`). ``docs/QA.md`` holds the measured numbers.

This package imports nothing on purpose: the experiment config imports :mod:`.config`.
"""
