"""``presdep rerank`` and ``presdep bm25``: the README's one-liner on a BEIR fixture (issue 40)."""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

import pytest

from presentation_dependence.cli import main
from presentation_dependence.config.adhoc import adhoc_config
from presentation_dependence.errors import ConfigError
from presentation_dependence.io.trec import read_run
from presentation_dependence.runners.readback import folder_config

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "fixtures" / "beir-tiny"


def _readme_lines() -> list[list[str]]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    block = text.split("<!-- rerank-oneliner", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    return [shlex.split(ln) for ln in block.splitlines() if ln.strip()]


def test_the_readme_one_liner_reranks_a_beir_run(tmp_path: Path, monkeypatch) -> None:
    shutil.copytree(FIXTURE, tmp_path / "fixtures" / "beir-tiny")
    monkeypatch.chdir(tmp_path)
    lines = _readme_lines()
    assert [ln[:3] for ln in lines] == [["uv", "run", "presdep"]] * 2
    for argv in lines:
        assert main(argv[3:]) == 0, argv
    folder = tmp_path / "runs" / "beir-tiny" / "e5"
    first = read_run(tmp_path / "runs" / "beir-tiny" / "bm25.trec").to_dict()
    reranked = read_run(folder / "run.trec").to_dict()
    assert set(reranked) == set(first) == {"q1", "q2", "q3"}
    for qid, docs in first.items():  # the same candidates, scored by the teacher
        assert set(reranked[qid]) == set(docs) and reranked[qid] != docs
    assert "ndcg@10" in (folder / "metrics.json").read_text()
    # The frozen config is the folder's: psi takes it without a CONFIG, and a rerun reuses.
    frozen = folder_config(folder)
    assert frozen.reranker.reranker_class == "E5BiEncoderReranker"
    assert frozen.data.dataloader_class == "BeirLoader" and frozen.data.top_k == 20
    assert main(["psi", "--run-dir", str(folder)]) == 0
    assert (folder / "psi" / "psi_metrics.json").is_file()
    assert main([*lines[1][3:]]) == 0  # the same line again: every query reused


def test_a_corpus_and_topics_file_and_the_errors(tmp_path: Path) -> None:
    run = tmp_path / "r.trec"
    run.write_text("q1 Q0 d1 1 2.0 x\nq1 Q0 d2 2 1.0 x\n")
    (tmp_path / "c.tsv").write_text("d1\tsolar panels\nd2\tbread\n")
    (tmp_path / "t.tsv").write_text("q1\tsolar\n")
    cfg = adhoc_config(
        run, corpus=tmp_path / "c.tsv", topics=tmp_path / "t.tsv", top_k=5,
        reranker="IdentityReranker", overrides=["data.max_queries=1"],
    )  # fmt: skip
    assert cfg.data.dataloader_class == "TrecRunLoader" and cfg.data.max_queries == 1
    assert cfg.id == "rerank-r-IdentityReranker" and cfg.data.top_k == 5
    with pytest.raises(ConfigError, match="Did you mean 'GradeReranker'"):
        adhoc_config(run, beir=FIXTURE, reranker="GradeRerankr")
    with pytest.raises(ConfigError, match="not both"):
        adhoc_config(run, beir=FIXTURE, corpus=tmp_path / "c.tsv")
    with pytest.raises(ConfigError, match="go together"):
        adhoc_config(run, corpus=tmp_path / "c.tsv")
