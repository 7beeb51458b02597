"""Run reports: Markdown + HTML pages with plots from PSI run folders (``scripts/report.py``)."""

from presentation_dependence.report.render import write_report

__all__ = ["write_report"]
