"""Rerankers. Importing this package registers every built-in reranker.

A reranker is one module in this package whose class carries ``@RERANKERS.register()``:
every module here is imported below, so nothing else needs editing (rerankers of your own
outside the package: the config's ``plugins`` list).
"""

import importlib
import pkgutil

from presentation_dependence.rerankers.base import (
    RERANKERS,
    Paradigm,
    Reranker,
    RerankerConfig,
    RerankerOptions,
    build_reranker,
)

for _module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    importlib.import_module(f"{__name__}.{_module}")  # registers its rerankers

__all__ = [
    "RERANKERS",
    "Paradigm",
    "Reranker",
    "RerankerConfig",
    "RerankerOptions",
    "build_reranker",
]
