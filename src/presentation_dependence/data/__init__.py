"""Data loaders: config ``data`` block -> :class:`Dataset` of rerank requests and judgements."""

from presentation_dependence.data import (
    extra_loaders,  # noqa: F401  (IrDatasets, Parquet)
    hotpotqa,  # noqa: F401  (registers HotpotQALoader)
)
from presentation_dependence.data.loaders import (
    LOADERS,
    BeirLoader,
    Dataset,
    FixtureLoader,
    Loader,
    RankLLMJsonLoader,
    TrecRunLoader,
    check_loader,
    load_dataset,
)

__all__ = [
    "LOADERS",
    "BeirLoader",
    "Dataset",
    "FixtureLoader",
    "Loader",
    "RankLLMJsonLoader",
    "TrecRunLoader",
    "check_loader",
    "load_dataset",
]
