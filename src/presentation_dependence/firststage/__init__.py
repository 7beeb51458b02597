"""First stages: a Java-free BM25 (bm25s), Pyserini and ir_datasets adapters, ``dataset_meta.yaml``.

Pyserini and ir_datasets are optional: their modules import them lazily and stop with a
:class:`~presentation_dependence.requirements.MissingRequirementError` naming what is
missing (package, Java 21, network) before doing any work.
"""

from presentation_dependence.firststage.meta import (
    META_FILE,
    CollectionInfo,
    DatasetMeta,
    RunRecord,
    read_dataset_meta,
    record_run,
)
from presentation_dependence.requirements import MissingRequirementError

__all__ = [
    "META_FILE",
    "CollectionInfo",
    "DatasetMeta",
    "MissingRequirementError",
    "RunRecord",
    "read_dataset_meta",
    "record_run",
]
