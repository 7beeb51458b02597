"""``presdep psi-diff``: two PSI folders of one config compared score by score."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from presentation_dependence.cli import main
from presentation_dependence.config import load_experiment_config
from presentation_dependence.errors import PresdepError
from presentation_dependence.robustness.archive_diff import archive_diff
from presentation_dependence.robustness.runner import PSIRunner

from .test_runner import identity_psi_config, make_fixture


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    cfg = load_experiment_config(identity_psi_config(tmp_path, make_fixture(tmp_path / "f.jsonl")))
    PSIRunner(cfg, tmp_path / "a").run()
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    return tmp_path / "a", tmp_path / "b"


def _shift_one_score(folder: Path, by: float) -> int:
    path = folder / "psi" / "grade_distributions.npz"
    with np.load(path, allow_pickle=False) as z:
        cols = {k: z[k] for k in z.files}
    cols["score"] = cols["score"].copy()
    cols["score"][5] += by
    np.savez(path, **cols)
    return int(cols["score"].size)


def test_identical_folders_differ_by_nothing_and_a_shift_is_found(pair, capsys):
    a, b = pair
    same = archive_diff(a, b)
    assert same.max_abs_diff == 0.0 and same.queries == 3
    n = _shift_one_score(b, 0.25)
    d = archive_diff(a, b)
    assert d.scores == n
    assert d.max_abs_diff == pytest.approx(0.25) and d.mean_abs_diff == pytest.approx(0.25 / n)
    assert main(["psi-diff", str(a), str(b)]) == 0
    assert "max |Δ| 0.25" in capsys.readouterr().out


def test_other_presentations_are_refused(pair):
    a, b = pair
    path = b / "psi" / "presentations.json"
    doc = json.loads(path.read_text())
    qid = next(iter(doc["presentations"]))
    doc["presentations"][qid]["random_shuffle"][0].reverse()
    path.write_text(json.dumps(doc))
    with pytest.raises(PresdepError, match="other presentations"):
        archive_diff(a, b)
