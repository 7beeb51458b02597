"""Packaging: the library declares a torch range (setup pins it), and a built wheel installed
into a fresh virtual environment outside the repository runs the main job's pipeline and
``presdep eval RUN QRELS`` there (configs and the NovelEval fixture come from the wheel)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
import tomllib

REPO = Path(__file__).resolve().parents[1]
MAIN_CONFIG = "configs/experiments/example-noveleval-smollm2.yaml"


def test_torch_range_in_the_library_pin_in_setup() -> None:
    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    (torch,) = [d for d in deps if re.match(r"torch\b", d)]
    assert "==" not in torch and ">=" in torch
    pins = re.findall(
        r"^torch==([\d.]+)$", (REPO / "requirements/constraints.txt").read_text(), re.M
    )
    assert len(pins) == 1
    setup = (REPO / "setup.sh").read_text()
    assert "requirements/constraints.txt" in setup and '--constraint "$CONSTRAINTS"' in setup


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{args}\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


@pytest.mark.slow
@pytest.mark.integration
def test_wheel_runs_outside_the_repository(tmp_path: Path) -> None:
    uv = shutil.which("uv")
    if uv is None:
        pytest.skip("uv not found on PATH (./setup.sh installs it)")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["OMP_NUM_THREADS"] = "1"
    dist = tmp_path / "dist"
    _run([uv, "build", "--wheel", "--out-dir", str(dist), str(REPO)], tmp_path, env)
    (wheel,) = dist.glob("*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "presentation_dependence/py.typed" in names
    assert f"presentation_dependence/_data/{MAIN_CONFIG}" in names
    assert "presentation_dependence/_data/fixtures/noveleval/noveleval.jsonl" in names

    # A fresh venv that sees this venv's packages (torch, transformers, ...) through a .pth
    # line, so nothing is downloaded; the wheel itself is installed without dependencies. The
    # line only appends a path: this venv's editable-install hook is not run there.
    venv = tmp_path / "venv"
    _run([uv, "venv", "--quiet", "--python", sys.executable, str(venv)], tmp_path, env)
    python = venv / "bin" / "python"
    site = _run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        tmp_path,
        env,
    )
    Path(site.strip(), "zz_repo_packages.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _run(
        [uv, "pip", "install", "--quiet", "--python", str(python), "--no-deps", str(wheel)],
        tmp_path,
        env,
    )

    # The console script, then the rest in one process (one torch import: the test stays short).
    assert _run([str(venv / "bin" / "presdep"), "--version"], tmp_path, env).startswith("presdep ")
    work = tmp_path / "work"
    script = f"""
import contextlib, io, os
import presentation_dependence as pd
from presentation_dependence.cli import main
assert pd.__file__.startswith({str(venv)!r}), pd.__file__
assert main(["init", {str(work)!r}]) == 0
os.chdir({str(work)!r})
out = io.StringIO()
with contextlib.redirect_stdout(out):
    assert main(["configs"]) == 0
assert "example-noveleval-smollm2" in out.getvalue()
cfg = pd.load_experiment_config({MAIN_CONFIG!r})
assert cfg.reranker.reranker_class == "GradeReranker"
assert len(pd.load_dataset(cfg.data).requests) == 21
# The main job's pipeline on three queries, with the first stage's order as the reranker.
overrides = ["-o", "reranker={{reranker_class: IdentityReranker}}", "-o", "data.max_queries=3"]
assert main(["run", {MAIN_CONFIG!r}, "--run-dir", "run", "--eval", *overrides]) == 0
with contextlib.redirect_stdout(out):
    assert main(["eval", "run/run.trec", "run/qrels.txt", "-m", "nDCG@10", "-m", "RR@10"]) == 0
print(out.getvalue())
"""
    out = _run([str(python), "-c", script], tmp_path, env)
    assert (work / "run" / "metrics.json").is_file()
    assert (work / "run" / "rerank_results.json").is_file()
    assert re.search(r"^nDCG@10\s+all\s+\d\.\d{4}$", out, re.M)


def _quickstart_lines() -> list[str]:
    """The README's wheel quick start: the bash block after its marker comment."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    after = text.split("<!-- wheel-quickstart", 1)[1]
    block = after.split("```bash\n", 1)[1].split("```", 1)[0]
    return [ln for ln in block.splitlines() if ln.strip()]


@pytest.mark.slow
@pytest.mark.integration
def test_readme_wheel_quickstart_runs_verbatim_in_a_clean_venv(tmp_path: Path) -> None:
    """Issue 40: a venv with nothing borrowed; the README's lines run as written, `pip` being
    uv's installer into that venv and `presentation-dependence` the wheel built here. Only
    torch's CPU build is steered (the local wheel folder, else PyTorch's CPU index), as
    ./setup.sh does; everything else resolves from the package index (uv's cache)."""
    uv = shutil.which("uv")
    if uv is None:
        pytest.skip("uv not found on PATH (./setup.sh installs it)")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["OMP_NUM_THREADS"] = "1"
    dist = tmp_path / "dist"
    _run([uv, "build", "--wheel", "--out-dir", str(dist), str(REPO)], tmp_path, env)
    (wheel,) = dist.glob("*.whl")
    venv = tmp_path / "venv"
    _run([uv, "venv", "--quiet", "--python", sys.executable, str(venv)], tmp_path, env)
    python = venv / "bin" / "python"
    links = env.get("UV_FIND_LINKS") or env.get("PIP_FIND_LINKS") or ""
    constraints = REPO / "requirements/constraints.txt"
    torch_from = f'--find-links "{links}"' if links else ""
    if not links:  # as ./setup.sh: the CPU build, not PyPI's CUDA one
        _run(
            [uv, "pip", "install", "--quiet", "--python", str(python), "--index-url",
             "https://download.pytorch.org/whl/cpu", "--constraint", str(constraints), "torch"],
            tmp_path,
            env,
        )  # fmt: skip
    lines = _quickstart_lines()
    assert lines[0] == "pip install presentation-dependence"
    script = "\n".join(
        [
            "set -euo pipefail",
            f'export PATH="{venv / "bin"}:$PATH"',
            "pip() {",
            '  local args=("${@/#presentation-dependence/' + str(wheel) + '}")',
            f'  "{uv}" pip "${{args[@]}}" --quiet --python "{python}" {torch_from} '
            f'--constraint "{constraints}"',
            "}",
            *lines,
        ]
    )
    out = _run(["bash", "-c", script], tmp_path, env)
    paths = _run([str(python), "-c", "import sys; print(sys.path)"], tmp_path, env)
    assert str(REPO) not in paths and sysconfig.get_paths()["purelib"] not in paths  # no borrowing
    assert "example-noveleval-smollm2" in out and " yes " in out  # presdep configs' marks
    (metrics,) = (tmp_path / "work" / "runs" / "example-noveleval-smollm2").glob("*/metrics.json")
    per_query = list(metrics.parent.glob("per_query_results/*.json"))
    assert len(per_query) == 1  # one query reranked by the embedded model
    assert "ndcg@10" in metrics.read_text()
