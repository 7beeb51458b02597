"""The ``data`` block of an experiment config."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, fields
from pathlib import Path

from presentation_dependence.errors import ConfigError, shown
from presentation_dependence.fields import opt

__all__ = ["DataConfig", "data_block_at", "resolve_path"]

PathSpec = str | list[str] | None


@dataclass(frozen=True)
class DataConfig:
    """Where the queries and their first-stage candidates come from.

    Path fields take one path or a list of alternatives (the first that exists is used), so a
    config can point at ``data/<dataset>/`` and fall back to ``../shared/data/<dataset>/``.
    Relative paths are relative to the working directory.
    """

    dataloader_class: str = opt(
        "FixtureLoader",
        "Registered loader: FixtureLoader | BeirLoader | RankLLMJsonLoader | "
        "TrecRunLoader | IrDatasetsLoader | ParquetLoader",
    )
    path: PathSpec = opt(
        None,
        "Fixture JSONL (FixtureLoader), rank_llm JSON (RankLLMJsonLoader), BEIR folder "
        "(BeirLoader), ir_datasets id (IrDatasetsLoader) or parquet file (ParquetLoader)",
    )
    run: PathSpec = opt(None, "First-stage TREC run (BeirLoader, TrecRunLoader, IrDatasetsLoader)")
    corpus: PathSpec = opt(
        None, "Corpus for TrecRunLoader: BEIR corpus.jsonl or a 'docid<TAB>text' TSV"
    )
    topics: PathSpec = opt(None, "Topics 'qid<TAB>text' (TrecRunLoader)")
    qrels: PathSpec = opt(None, "TREC qrels; replaces any judgements the loader itself provides")
    split: str = opt("test", "BEIR split (qrels/<split>.tsv)")
    top_k: int = opt(100, "First-stage depth kept per query")
    max_queries: int | None = opt(
        None,
        "Keep N queries: the first N in file order, or N drawn with query_sample_seed; null = all",
    )
    query_sample_seed: int | None = opt(
        None,
        "With max_queries: draw the N queries uniformly without replacement with this seed "
        "(kept in file order; all when there are <= N); null = the first N",
    )
    judged_only: bool = opt(
        False,
        "Drop queries with no judgement in the (final) qrels before max_queries applies, "
        "as a TREC-style evaluation averages only judged queries",
    )

    def __post_init__(self) -> None:
        if self.top_k < 1:
            raise ConfigError(f"data.top_k must be >= 1, got {self.top_k}")
        if self.max_queries is not None and self.max_queries < 1:
            raise ConfigError(f"data.max_queries must be >= 1 or null, got {self.max_queries}")
        seed = self.query_sample_seed
        if seed is not None:
            if seed < 0:
                raise ConfigError(f"data.query_sample_seed must be >= 0 or null, got {seed}")
            if self.max_queries is None:
                raise ConfigError(
                    "data.query_sample_seed draws max_queries queries: set data.max_queries "
                    "too, or drop the seed"
                )
        for name in ("path", "run", "corpus", "topics", "qrels"):
            v = getattr(self, name)
            if v is not None and not isinstance(v, (str, list)):
                raise ConfigError(f"data.{name} must be a path or a list of paths, got {shown(v)}")


def resolve_path(spec: PathSpec, key: str, *, required: bool = True) -> Path | None:
    """The first existing path of ``spec`` (one path or a list of alternatives).

    Raises :class:`ConfigError` naming the config key and every path tried when none exists.
    """
    if spec is None:
        if required:
            raise ConfigError(f"data.{key} is required by this loader; set it in the config")
        return None
    options = [spec] if isinstance(spec, str) else list(spec)
    for p in options:
        if Path(p).expanduser().exists():
            return Path(p).expanduser()
    raise ConfigError(
        f"data.{key}: none of these paths exists: {', '.join(options)}. "
        "Fetch the data (docs/DATA-SETUP.md) or point the config at it with "
        f"--override data.{key}=PATH",
        key=f"data.{key}",
    )


@contextmanager
def data_block_at(where: str) -> Iterator[None]:
    """Load a data block that lives at ``where`` of another config (a training config's
    ``silver.data.0`` or ``splits.heldout.1``): a :class:`ConfigError` about ``data.KEY``
    names ``where.KEY`` instead, so its ``--override`` hint is a key that exists there."""
    try:
        yield
    except ConfigError as e:
        names = "|".join(f.name for f in fields(DataConfig))
        text = re.sub(rf"(?<![\w/.-])data\.({names})\b", rf"{where}.\1", str(e))
        key = None if e.key is None else re.sub(r"^data\.", f"{where}.", e.key)
        raise ConfigError(text, key=key) from None
