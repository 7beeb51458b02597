"""Rerankers. Importing this package registers every built-in reranker.

A module registers its class with ``@RERANKERS.register()``; add the module to the imports
below (or load your own with the config's ``plugins`` list).
"""

import presentation_dependence.rerankers.grade  # noqa: F401  (registers)
from presentation_dependence.rerankers import (
    api_teacher,  # noqa: F401  (registers)
    capcal,  # noqa: F401  (registers)
    cross_encoder,  # noqa: F401  (registers)
    e5_biencoder,  # noqa: F401  (registers)
    generative_listwise,  # noqa: F401  (registers)
    gold,  # noqa: F401  (registers)
    identity,  # noqa: F401  (registers)
    minilm_biencoder,  # noqa: F401  (registers)
    pine,  # noqa: F401  (registers)
    self_consistency,  # noqa: F401  (registers)
    vllm_grade,  # noqa: F401  (registers)
)
from presentation_dependence.rerankers.base import (
    RERANKERS,
    Paradigm,
    Reranker,
    RerankerConfig,
    RerankerOptions,
    build_reranker,
)

__all__ = [
    "RERANKERS",
    "Paradigm",
    "Reranker",
    "RerankerConfig",
    "RerankerOptions",
    "build_reranker",
]
