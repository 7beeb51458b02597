"""plan is read-only and honest; run materialises offline rows and skips the rest with a reason."""

from __future__ import annotations

import importlib.util
import io
import json
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

from presentation_dependence.data import load_dataset
from presentation_dependence.data.config import DataConfig
from presentation_dependence.firststage.meta import read_dataset_meta
from presentation_dependence.reproduction.materialise import download_beir, materialise
from presentation_dependence.reproduction.plan import Environment, format_plan, make_plan
from presentation_dependence.reproduction.populations import load_population
from presentation_dependence.requirements import Problem

REPO = Path(__file__).resolve().parents[2]


def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def _env(**kw: object) -> Environment:
    env = Environment(probe_network=False, environ={"PATH": ""})
    env._java.append(Problem("Java 21+ not found (JAVA_HOME)", "none here", "install one"))
    return env


def test_plan_statuses_and_read_only(study_root: Path) -> None:
    pytest.importorskip("bm25s")
    before = _tree(study_root)
    env = _env()
    rows = {
        r.collection.id: r
        for r in make_plan(load_population("tiny", study_root), root=study_root, env=env)
    }
    assert _tree(study_root) == before  # plan wrote nothing
    assert rows["local-beir"].status == "offline" and rows["local-beir"].route.startswith(
        "local BEIR"
    )
    assert rows["local-rl"].status == "offline" and rows["local-rl"].note == "copied BM25"
    remote = rows["remote"]
    assert remote.status == "blocked" and "Java 21+ not found (JAVA_HOME)" in remote.missing
    assert "no network" in remote.missing
    assert rows["gated-one"].status == "skip" and "gated" in rows["gated-one"].note
    assert rows["private"].status == "skip" and "not distributed" in rows["private"].note
    text = format_plan(list(rows.values()), env=env)
    assert "network: not probed" in text and "summary: offline 2" in text
    assert (
        json.loads(format_plan(list(rows.values()), as_json=True))["rows"][2]["status"] == "blocked"
    )


def test_fetch_when_everything_is_there(study_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = Environment(probe_network=True, probe=lambda host: True)
    env._java.append(None)
    from presentation_dependence.reproduction import plan as plan_mod

    monkeypatch.setattr(plan_mod, "check_module", lambda *a, **k: None)
    rows = make_plan(
        load_population("tiny", study_root), root=study_root, env=env, collections=["remote"]
    )
    assert [(r.status, r.route) for r in rows] == [("fetch", "Pyserini")]


def test_run_materialises_offline_rows(study_root: Path) -> None:
    pytest.importorskip("bm25s")
    pop = load_population("tiny", study_root)
    rows = make_plan(pop, root=study_root, env=_env())
    outcomes = {r.collection.id: materialise(r, root=study_root) for r in rows}
    assert {k: o.result for k, o in outcomes.items()} == {
        "local-beir": "done",
        "local-rl": "done",
        "remote": "skipped",
        "gated-one": "skipped",
        "private": "skipped",
    }
    assert (
        "missing now: " in outcomes["remote"].detail and "no network" in outcomes["remote"].detail
    )
    beir = study_root / "data" / "dd-local-beir"
    meta = read_dataset_meta(beir)
    assert meta.files == {"fixture": "fixture.jsonl", "fixture_run": "bm25s.trec"}
    assert meta.runs["bm25s.trec"].retriever == "bm25s"
    ds = load_dataset(DataConfig(path=str(beir / "fixture.jsonl")))
    assert ds.qids() == ["q1", "q2"] and ds.qrels is not None
    assert all(len(r.candidates) <= 3 for r in ds.requests)  # the declared depth
    rl = study_root / "data" / "dd-local-rl"
    assert (rl / "bm25.trec").read_bytes() == (study_root / "corpora/rl/run.trec").read_bytes()
    assert read_dataset_meta(rl).runs["bm25.trec"].retriever == "copied"
    # a second plan sees them as ready, and run skips them unless forced
    again = make_plan(pop, root=study_root, env=_env())
    assert [r.status for r in again][:2] == ["ready", "ready"]
    assert materialise(again[0], root=study_root).result == "skipped"
    assert materialise(again[0], root=study_root, force=True).result == "done"


def test_download_beir_from_a_zip(tmp_path: Path) -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("tiny/corpus.jsonl", '{"_id": "d", "text": "x"}\n')
        zf.writestr("tiny/queries.jsonl", '{"_id": "q", "text": "x"}\n')
        zf.writestr("tiny/qrels/test.tsv", "query-id\tcorpus-id\tscore\nq\td\t1\n")
    (tmp_path / "tiny.zip").write_bytes(buf.getvalue())
    out = download_beir((tmp_path / "tiny.zip").as_uri(), tmp_path / "data" / "beir")
    assert (out / "corpus.jsonl").is_file() and (out / "qrels" / "test.tsv").is_file()
    bad = io.BytesIO()
    with zipfile.ZipFile(bad, "w") as zf:
        zf.writestr("readme.txt", "no corpus")
    (tmp_path / "bad.zip").write_bytes(bad.getvalue())
    from presentation_dependence.errors import PresdepError

    with pytest.raises(PresdepError, match="not a BEIR dataset zip"):
        download_beir((tmp_path / "bad.zip").as_uri(), tmp_path / "data" / "bad")
    assert not (tmp_path / "data" / "bad").exists()


def _script(rel: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(Path(rel).stem, REPO / rel)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_plan_script_on_the_real_population_offline(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """`setup_reproduction_data.py plan` runs offline and is honest about this machine."""
    monkeypatch.chdir(REPO)
    script = _script("scripts/setup_reproduction_data.py")
    args = ["plan", "--task", "passage-reranking", "--no-probe", "--data-root", str(tmp_path)]
    assert script.main(args) == 0
    out = capsys.readouterr().out
    assert "network: not probed" in out and "summary:" in out
    for cid in ("signal1m", "trec-news", "robust04"):
        assert f"{cid}: " in out
    lines = {
        ln.split()[0]: ln for ln in out.splitlines() if ln and ln.split()[0] in ("legal-a", "dl20")
    }
    assert " skip " in lines["legal-a"] and "not distributed" in lines["legal-a"]
    assert " blocked " in lines["dl20"] and "no network" in lines["dl20"]
    if (REPO.parent / "shared" / "data" / "beir-scifact").is_dir():
        sci = next(ln for ln in out.splitlines() if ln.startswith("scifact "))
        assert " offline " in sci or " blocked " in sci  # blocked only without bm25s
    assert script.main(["plan", "--task", "nope"]) == 2
