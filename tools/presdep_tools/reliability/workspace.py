"""A throwaway project for one reliability case: smoke fixture, plugin rerankers, CLI calls."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from presdep_tools.reliability import CaseFailed
from presentation_dependence.cli import main
from presentation_dependence.data.smoke import build_smoke_fixture
from presentation_dependence.secrets import RedactingFormatter

__all__ = ["PLUGIN_MODULE", "Workspace", "capture_logs", "expect"]

PLUGIN_MODULE = "presdep_reliability_plugin"
PLUGIN = '''
"""Rerankers for the reliability cases: slow and logging, or refusing like a hosted 400."""
import os, time, zlib
from dataclasses import dataclass
from presentation_dependence.errors import PresdepError
from presentation_dependence.records import RankResult
from presentation_dependence.rerankers.base import RERANKERS, Paradigm, RerankerOptions

@dataclass(frozen=True)
class SlowOptions(RerankerOptions):
    delay_s: float = 0.0
    log_path: str = ""
    refuse: bool = False

@RERANKERS.register()
class ReliabilityReranker:
    paradigm = Paradigm.POINTWISE
    config_cls = SlowOptions
    def __init__(self, options=None):
        self.options = options or SlowOptions()
    def rank(self, query, candidates):
        if self.options.refuse:
            raise PresdepError("HTTP 400: max_tokens is too large (a refused request)")
        if self.options.log_path:
            with open(self.options.log_path, "a") as f:
                f.write(f"{os.getpid()} {query.qid}\\n")
        time.sleep(self.options.delay_s)
        scores = [zlib.crc32((query.text + c.text).encode()) % 1000 for c in candidates]
        return RankResult.from_scores(query, candidates, scores)
    def describe(self):
        return {"reranker_class": "ReliabilityReranker"}
'''


class _Capture(logging.Handler):
    """Keeps the package's log messages in memory; marked so the CLI adds no stderr handler."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.messages: list[str] = []
        self._presdep = True

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(self.format(record))


_CAPTURE = _Capture()


def capture_logs() -> _Capture:
    """Route the package's logs to memory (call once, before any CLI call)."""
    logger = logging.getLogger("presentation_dependence")
    if _CAPTURE not in logger.handlers:
        _CAPTURE.setFormatter(RedactingFormatter("%(levelname)s %(name)s: %(message)s"))
        logger.addHandler(_CAPTURE)
        logger.setLevel(logging.INFO)
        logger.propagate = False
    return _CAPTURE


def expect(condition: bool, what: str) -> None:
    """Raise CaseFailed(what) unless ``condition``."""
    if not condition:
        raise CaseFailed(what)


class Workspace:
    """``root/data/fixture.jsonl`` (6 queries x 15 candidates, judged), a plugin module and a
    config writer; CLI calls in this process or in subprocesses."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.fixture = build_smoke_fixture(root / "data")
        self.plugins = root / "plugins"
        self.plugins.mkdir()
        (self.plugins / f"{PLUGIN_MODULE}.py").write_text(PLUGIN, encoding="utf-8")
        if str(self.plugins) not in sys.path:
            sys.path.insert(0, str(self.plugins))

    def config(
        self,
        name: str = "exp",
        *,
        reranker: dict[str, Any] | None = None,
        data: dict[str, Any] | None = None,
        **blocks: Any,
    ) -> Path:
        body: dict[str, Any] = {
            "plugins": [PLUGIN_MODULE],
            "reranker": {"reranker_class": "ReliabilityReranker", **(reranker or {})},
            "data": {
                "dataloader_class": "FixtureLoader",
                "path": str(self.fixture),
                **(data or {}),
            },
            "eval": {"measures": ["ndcg@10"]},
            "robustness": {"num_presentations": 2, "null_repeats": 2, "bootstrap_resamples": 100},
            **blocks,
        }
        path = self.root / f"{name}.yaml"
        path.write_text(yaml.safe_dump(body), encoding="utf-8")
        return path

    def cli(self, *args: str) -> tuple[int, str]:
        """``presdep ARGS`` in this process: (exit code, the log it wrote)."""
        cap = capture_logs()
        cap.messages.clear()
        cwd = Path.cwd()
        os.chdir(self.root)
        try:
            rc = main(list(args))
        finally:
            os.chdir(cwd)
        return rc, "\n".join(cap.messages)

    def env(self) -> dict[str, str]:
        return {**os.environ, "PYTHONPATH": os.pathsep.join([str(self.plugins), *sys.path])}

    def spawn(self, args: Sequence[str], **kw: Any) -> subprocess.Popen[bytes]:
        """``presdep ARGS`` in a subprocess (output discarded)."""
        cmd = [sys.executable, "-m", "presentation_dependence.cli", *args]
        return subprocess.Popen(
            cmd,
            env=self.env(),
            cwd=self.root,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            **kw,
        )

    def files_holding(self, folder: Path, value: str) -> list[str]:
        """Files under ``folder`` whose name or bytes hold ``value``."""
        return [
            str(p.relative_to(folder))
            for p in folder.rglob("*")
            if value in p.name or (p.is_file() and value.encode() in p.read_bytes())
        ]
