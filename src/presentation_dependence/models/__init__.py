"""Model names and where the weights come from (the embedded model, local folders, the hub)."""

from presentation_dependence.models.embedded import (
    EMBEDDED_MODELS,
    EMBEDDED_PREFIX,
    ResolvedModel,
    cache_root,
    ensure_embedded,
    load_embedded_tokenizer,
    resolve_model,
)

__all__ = [
    "EMBEDDED_MODELS",
    "EMBEDDED_PREFIX",
    "ResolvedModel",
    "cache_root",
    "ensure_embedded",
    "load_embedded_tokenizer",
    "resolve_model",
]
