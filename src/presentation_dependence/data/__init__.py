"""Data loaders: config ``data`` block -> :class:`Dataset` of rerank requests and judgements."""

from presentation_dependence.data import (
    extra_loaders,  # noqa: F401  (IrDatasets, Parquet)
    hotpotqa,  # noqa: F401  (registers HotpotQALoader)
    loaders,
)
from presentation_dependence.data.loaders import *  # noqa: F403  (the package's names)

__all__ = loaders.__all__
