"""Silver files as training inputs (issue 38): non-finite labels are refused where the file is
read, and an existing file is kept only for the very data and settings it was made from."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from presentation_dependence.errors import ConfigError, InputFormatError
from presentation_dependence.training.config import SilverConfig
from presentation_dependence.training.silver import generate_silver, read_silver
from tests.training.conftest import NOVELEVAL, grade_block, noveleval_block


def _edit_line(src: Path, dst: Path, line: int, edit) -> Path:
    lines = src.read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[line - 1])
    edit(record)
    lines[line - 1] = json.dumps(record)
    dst.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return dst


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_a_non_finite_label_is_refused_with_its_line(silver_file, tmp_path, bad):
    def poison(record):
        record["order_scores"][1][2] = bad

    path = _edit_line(silver_file, tmp_path / "s.jsonl", 3, poison)
    assert ("NaN" if bad != bad else "Infinity") in path.read_text()  # json writes them
    with pytest.raises(InputFormatError) as e:
        read_silver(path)
    msg = str(e.value)
    assert f"{path}:3:" in msg and f"order_scores[1][2] is {bad!r}" in msg
    assert "presdep silver CONFIG --force" in msg


def test_a_non_finite_grade_probability_or_calibration_knot_is_refused(silver_file, tmp_path):
    def poison_probs(record):
        record["order_grade_probs"][0][0][0] = float("nan")

    path = _edit_line(silver_file, tmp_path / "p.jsonl", 2, poison_probs)
    with pytest.raises(InputFormatError, match=r"p\.jsonl:2: .*order_grade_probs\[0\]\[0\]\[0\]"):
        read_silver(path)

    def poison_knots(header):
        header["calibration"] = {"kind": "cdf", "knots_x": [0.0, 1.0], "knots_y": [0.0, "nan"]}

    header_path = _edit_line(silver_file, tmp_path / "h.jsonl", 1, poison_knots)
    text = header_path.read_text().replace('"nan"', "NaN")
    header_path.write_text(text)
    with pytest.raises(InputFormatError, match=r"h\.jsonl:1: .*calibration knots"):
        read_silver(header_path)


def _cfg(path: Path, data_path: Path, **kw) -> SilverConfig:
    block = noveleval_block(2, 4)
    return SilverConfig(
        path=str(path),
        teacher=grade_block(kw.pop("model")),
        num_orders=2,
        data=[type(block)(path=str(data_path), top_k=4, max_queries=2)],
        **kw,
    )


def test_silver_is_remade_only_when_its_data_is_unchanged(tiny_model, tmp_path):
    data = tmp_path / "queries.jsonl"
    shutil.copy(NOVELEVAL, data)
    cfg = _cfg(tmp_path / "s.jsonl", data, model=tiny_model)
    path = generate_silver(cfg)
    before = path.read_bytes()
    assert generate_silver(cfg) == path and path.read_bytes() == before  # same data: kept

    # The data file under the same path changes: one passage of the second query is edited.
    rows = [json.loads(x) for x in data.read_text(encoding="utf-8").splitlines()]
    second = json.loads(before.decode().splitlines()[2])
    docid = second["candidates"][1]["docid"]
    row = next(r for r in rows if str(r["qid"]) == second["qid"])
    for cand in row["candidates"]:
        if str(cand["docid"]) == docid:
            cand["text"] = "an edited passage"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(ConfigError) as e:
        generate_silver(cfg)
    msg = str(e.value)
    assert str(path) in msg and f"/{second['qid']}" in msg and repr(docid) in msg
    assert "--force" in msg
    assert path.read_bytes() == before
    remade = generate_silver(cfg, force=True)
    texts = [c["text"] for c in json.loads(remade.read_text().splitlines()[2])["candidates"]]
    assert "an edited passage" in texts


def test_silver_names_the_setting_that_differs(silver_file, tiny_model):
    cfg = SilverConfig(
        path=str(silver_file),
        teacher=grade_block(tiny_model),
        num_orders=3,
        seed=5,
        data=[noveleval_block(3, 5)],
    )
    with pytest.raises(ConfigError, match=r"silver\.seed: 0 in the file, 5 in the config"):
        generate_silver(cfg)


def test_a_header_from_before_an_option_existed_still_matches(silver, tiny_model):
    """Options added since a file was made are absent from its header: read with today's
    defaults, the header still matches; a stored value that differs is still named."""
    from presentation_dependence.data.config import DataConfig
    from presentation_dependence.fields import to_plain
    from presentation_dependence.rerankers.base import RerankerConfig
    from presentation_dependence.training.silver_check import setting_differences

    cfg = SilverConfig(
        path="x", teacher=grade_block(tiny_model), num_orders=3, data=[noveleval_block(3, 5)]
    )
    header = json.loads(json.dumps(silver.headers[0]))
    assert setting_differences(header, cfg) == []
    data_defaults = to_plain(DataConfig(path="x"))
    teacher_defaults = RerankerConfig.from_raw({"reranker_class": "GradeReranker"}).to_plain()
    block, teacher = header["config"]["data"][0], header["config"]["teacher"]
    dropped = [k for k in list(block) if k != "path" and block[k] == data_defaults.get(k)]
    dropped_t = [
        k for k in list(teacher) if k != "reranker_class" and teacher[k] == teacher_defaults.get(k)
    ]
    assert dropped and dropped_t
    for k in dropped:
        del block[k]
    for k in dropped_t:
        del teacher[k]
    assert setting_differences(header, cfg) == []
    block["top_k"] = 6
    diffs = setting_differences(header, cfg)
    assert len(diffs) == 1 and diffs[0].startswith("silver.data: ")
