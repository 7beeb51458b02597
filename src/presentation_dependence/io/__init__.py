"""Readers and writers for the file formats the toolkit reads and writes.

Every reader validates strictly and raises :class:`~presentation_dependence.errors.InputFormatError`
naming the file, the 1-based line, what was expected and the fix. Every writer is atomic
(:mod:`presentation_dependence.io.atomic`).
"""

from presentation_dependence.io.atomic import atomic_write_bytes, atomic_write_text
from presentation_dependence.io.beir import (
    beir_splits,
    read_beir_corpus,
    read_beir_qrels,
    read_beir_queries,
)
from presentation_dependence.io.corpus import read_corpus
from presentation_dependence.io.fixture import read_fixture, write_fixture
from presentation_dependence.io.rankllm_json import read_rankllm_json, write_rankllm_json
from presentation_dependence.io.trec import (
    read_qrels,
    read_run,
    read_topics,
    write_qrels,
    write_run,
    write_topics,
)

__all__ = [
    "atomic_write_bytes",
    "atomic_write_text",
    "beir_splits",
    "read_beir_corpus",
    "read_beir_qrels",
    "read_beir_queries",
    "read_corpus",
    "read_fixture",
    "read_qrels",
    "read_rankllm_json",
    "read_run",
    "read_topics",
    "write_fixture",
    "write_qrels",
    "write_rankllm_json",
    "write_run",
    "write_topics",
]
