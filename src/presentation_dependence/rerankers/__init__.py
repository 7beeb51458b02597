"""Rerankers. Importing this package registers every built-in reranker.

A module registers its class with ``@RERANKERS.register()``; add the module to the imports
below (or load your own with the config's ``plugins`` list).
"""

import presentation_dependence.rerankers.grade  # noqa: F401  (registers)
from presentation_dependence.rerankers import (
    capcal,  # noqa: F401  (registers)
    identity,  # noqa: F401  (registers)
    self_consistency,  # noqa: F401  (registers)
)
from presentation_dependence.rerankers.base import (
    RERANKERS,
    Paradigm,
    Reranker,
    RerankerOptions,
    build_reranker,
)

__all__ = ["RERANKERS", "Paradigm", "Reranker", "RerankerOptions", "build_reranker"]
