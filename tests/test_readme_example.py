"""The README's Python example runs as written (on the tiny model), and the API is importable."""

from __future__ import annotations

import contextlib
import io
import re
import subprocess
import sys
from pathlib import Path

import numpy as np

import presentation_dependence as pd

README = Path(__file__).resolve().parents[1] / "README.md"
MARKER = "<!-- readme-python-example: run by tests/test_readme_example.py -->"
MODEL_LINE = 'MODEL = "embedded:smollm2-135m-instruct"'


def readme_example() -> str:
    text = README.read_text(encoding="utf-8")
    assert MARKER in text, "the README lost its Python example marker"
    block = re.search(r"```python\n(.*?)```", text[text.index(MARKER) :], re.S)
    assert block is not None
    return block.group(1)


def test_readme_example_runs(tiny_model: str) -> None:
    code = readme_example()
    assert MODEL_LINE in code  # the only line the test changes: the model
    code = code.replace(MODEL_LINE, f"MODEL = {tiny_model!r}")
    namespace: dict[str, object] = {"__name__": "readme_example"}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(README), "exec"), namespace)
    scores = namespace["scores"]
    assert isinstance(scores, np.ndarray) and scores.shape == (6, 5)
    assert 0.0 < pd.tau_psi(scores) <= 1.0  # the random tiny model is order-dependent
    metrics = namespace["metrics"]
    assert isinstance(metrics, dict)
    assert set(metrics["mean"]) == {"nDCG@10", "RR@10", "AP", "Judged@10"}
    assert "tau-PSI" in out.getvalue()


def test_every_exported_name_resolves() -> None:
    for name in pd.__all__:
        assert getattr(pd, name) is not None, name
    assert (Path(pd.__file__).parent / "py.typed").is_file()


def test_import_stays_light() -> None:
    code = "import sys, presentation_dependence as pd; pd.Query; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_build_reranker_takes_option_fields_with_did_you_mean() -> None:
    import pytest

    from presentation_dependence.errors import ConfigError

    reranker = pd.build_reranker("GradeReranker", chunk_size=7, device="cpu")
    assert reranker.options.chunk_size == 7  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match="Did you mean 'chunk_size'"):
        pd.build_reranker("GradeReranker", chunk_sise=7)
