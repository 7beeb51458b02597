"""Presentation robustness: PSI over M presentations (``presdep psi``)."""
