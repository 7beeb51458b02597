"""QARunner: presentations -> paragraph scores -> retained paragraphs -> reader answers.

``presdep qa CONFIG --run-dir DIR``. Per question (``data``: :class:`HotpotQALoader`):

1. the presentations of the ``robustness`` block are drawn exactly as ``presdep psi`` draws
   them (:meth:`StageCommand.presentations`: same seeds, the same-order null included);
2. each presentation is scored by the configured reranker (B = its ``chunk_size``) and the
   ``qa`` retention rule keeps the top-k paragraphs (or those scoring >= a threshold);
3. the frozen reader answers from the retained paragraphs (first-stage order by default) and,
   once per question, from all paragraphs in the given order (the control);
4. answers are scored with HotpotQA EM/F1 against the gold answers.

Each question's record is written atomically to ``qa/per_question/<qid>.json`` (the resume
unit; a rerun checks it was drawn the same way). Once every question is done, ``qa/qa_records.jsonl``
(all records, data order) and ``qa/qa_metrics.json`` (:func:`~.analysis.analyse_qa`) are written.
``from_records=True`` recomputes the metrics from the records with no model call.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from presentation_dependence.config import ExperimentConfig
from presentation_dependence.data.hotpotqa import HotpotQALoader
from presentation_dependence.errors import ConfigError, PresdepError
from presentation_dependence.fields import to_plain
from presentation_dependence.metrics.decisions import retained_set
from presentation_dependence.metrics.ranking import ranks_from_scores
from presentation_dependence.presentations import score_presentations
from presentation_dependence.qa.analysis import analyse_qa
from presentation_dependence.qa.reader import FrozenReader, Reader, load_reader_config
from presentation_dependence.qa.scoring import best_em_f1
from presentation_dependence.records import Qrels, RerankRequest
from presentation_dependence.robustness.store import candidate_grades, ideal_grades
from presentation_dependence.runners.command import StageCommand
from presentation_dependence.runners.fingerprint import FINGERPRINT_KEY, resolved_data_paths
from presentation_dependence.runners.run_folder import safe_file_stem
from presentation_dependence.runners.stage import (
    CONFIG_KEY,
    StoredInput,
    config_fingerprint,
    run_stage,
)
from presentation_dependence.secrets import redact_obj

__all__ = ["QA_DIR", "QARunner", "QAStage"]

log = logging.getLogger(__name__)
QA_DIR = "qa"


class QARunner(StageCommand):
    def __init__(
        self, cfg: ExperimentConfig, run_dir: str | Path, *, reader: Reader | None = None, **kw: Any
    ) -> None:
        super().__init__(cfg, run_dir, **kw)
        self.qa = cfg.qa
        self.reader_cfg = load_reader_config(cfg.qa.reader)
        self.dir = self.folder.path / QA_DIR
        self._reader = reader

    @property
    def reader(self) -> Reader:
        if self._reader is None:
            self._reader = FrozenReader(self.reader_cfg, cache=self.qa.cache_answers)
        return self._reader

    # -- one question ----------------------------------------------------------------------
    def _retain(self, scores: np.ndarray) -> list[int]:
        """Input indices of the retained paragraphs, in the reader's order."""
        n = scores.shape[0]
        tiebreak = np.arange(n)  # first-stage rank, as everywhere
        if self.qa.retain_top_k is not None:
            kept = retained_set(
                scores, list(range(n)), top_k=self.qa.retain_top_k, tiebreak=tiebreak
            )
        else:
            kept = retained_set(scores, list(range(n)), threshold=self.qa.retain_threshold)
        idx = [i for i in range(n) if i in kept]
        if self.qa.reader_order == "rank":
            ranks = ranks_from_scores(scores, tiebreak)
            idx.sort(key=lambda i: int(ranks[i]))
        return idx

    def _read(self, req: RerankRequest, idx: Sequence[int], golds: Sequence[str]) -> dict[str, Any]:
        ans = self.reader.read(req.query.text, [req.candidates[i].text for i in idx])
        em, f1 = best_em_f1(ans.answer, golds)
        return {**ans.to_dict(), "em": em, "f1": f1}

    def _freeze_reader(self) -> None:
        """``qa/reader.json``: the reader config as run; a folder refuses another reader."""
        path = self.dir / "reader.json"
        plain = redact_obj(to_plain(self.reader_cfg))
        if path.exists():
            old = json.loads(path.read_text(encoding="utf-8"))
            if old == plain:
                return
            if self.folder.has_results():
                raise ConfigError(
                    f"{path} was written with another reader config ({old}); now {plain}. "
                    "Use a new --run-dir"
                )
            log.warning("%s holds no answers yet: replacing its reader config", self.dir)
        self.folder.write_redacted_json(path.relative_to(self.folder.path), plain)

    def _frozen_reader(self) -> dict[str, Any]:
        path = self.dir / "reader.json"
        if path.exists():
            frozen: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
            return frozen
        return dict(redact_obj(to_plain(self.reader_cfg)))

    # -- entry points ----------------------------------------------------------------------
    def run(self, *, from_records: bool = False) -> dict[str, Any] | None:
        """Answer what is missing (unless ``from_records``); return the metrics once complete."""
        with self.folder.logging_to_file():
            return self._run(from_records)

    def _run(self, from_records: bool) -> dict[str, Any] | None:
        records_path = self.dir / "qa_records.jsonl"
        # Inputs are checked (and the data loaded) before the config is frozen, so a failed
        # start leaves no config behind (issue 16, defect 4).
        if from_records:
            if not records_path.exists():
                raise PresdepError(f"--from-records needs {records_path}; run 'presdep qa' first")
            self.folder.freeze_config(self.cfg)  # the records must come from this config
            lines = records_path.read_text(encoding="utf-8").splitlines()
            return self._analyse([json.loads(line) for line in lines if line.strip()])
        if self.cfg.data.dataloader_class != "HotpotQALoader":
            raise ConfigError(
                "presdep qa needs data.dataloader_class HotpotQALoader (gold answers), got "
                f"{self.cfg.data.dataloader_class!r}"
            )
        dataset, answers = HotpotQALoader(self.cfg.data).load_with_answers()
        paths = resolved_data_paths(self.cfg.data)
        self.folder.freeze_config(self.cfg, resolved_paths=paths)
        self._freeze_reader()
        qrels = dataset.qrels
        assert qrels is not None  # HotpotQALoader always judges every paragraph
        grades = {r.query.qid: candidate_grades(r, qrels) for r in dataset.requests}
        stage = QAStage(self, grades, qrels, answers)
        summary = run_stage(
            stage,
            self.folder,
            dataset.requests,
            desc=f"qa {self.cfg.id}",
            shard=self.shard,
            recompute_changed=self.recompute_changed,
            argv=self.argv,
            seeds={"seed": self.cfg.seed, "presentation_seed": self.presentation_seed},
            provenance={"data_paths": paths},
            stale=(records_path, self.dir / "qa_metrics.json"),
        )
        stats = getattr(self.reader, "stats", None) if summary.computed else None
        if callable(stats):
            log.info("reader: %s (this process)", stats())
        if not summary.complete:
            return None
        records = [
            json.loads(stage.path(r.query.qid).read_text(encoding="utf-8"))
            for r in dataset.requests
        ]
        text = "".join(json.dumps(rec, ensure_ascii=False) + "\n" for rec in records)
        self.folder.write_text(records_path.relative_to(self.folder.path), text)
        return self._analyse(records)

    def _analyse(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        metrics = analyse_qa(records, self.cfg.robustness, seed=self.presentation_seed)
        metrics["setup"] = {
            "experiment": self.cfg.id,
            "reranker": self.cfg.reranker.to_plain(),
            "perturbations": list(self.cfg.robustness.perturbations),
            "num_presentations": self.cfg.robustness.num_presentations,
            "null_repeats": self.cfg.robustness.null_repeats
            or self.cfg.robustness.num_presentations,
            "retention": self.qa.retention,
            "reader_order": self.qa.reader_order,
            "cache_answers": self.qa.cache_answers,
            "reader": self._frozen_reader(),
            "presentation_seed": self.presentation_seed,
        }
        path = self.dir / "qa_metrics.json"
        self.folder.write_json(path.relative_to(self.folder.path), metrics)
        log.info("wrote %s", path)
        return metrics


class QAStage:
    """The ``qa`` stage: one question's record; ``qa/per_question/<qid>.json``.

    A stored record is reused only for the same presentations and judgements as well.
    """

    name = "qa"
    unit = "question"

    def __init__(
        self,
        runner: QARunner,
        grades: Mapping[str, np.ndarray],
        qrels: Qrels,
        answers: Mapping[str, Sequence[str]],
    ) -> None:
        self.runner = runner
        self.grades = grades
        self.qrels = qrels
        self.answers = answers
        self.config_sha256 = config_fingerprint(
            {"reranker": runner.cfg.reranker, "qa": runner.qa, "reader": runner.reader_cfg}
        )

    def path(self, qid: str) -> Path:
        return self.runner.dir / "per_question" / f"{safe_file_stem(qid)}.json"

    def read_input(self, path: Path) -> StoredInput:
        rec = json.loads(path.read_text(encoding="utf-8"))
        return StoredInput(
            docids=list(rec["docids"]),
            request_sha256=rec.get(FINGERPRINT_KEY),
            config_sha256=rec.get(CONFIG_KEY),
            query_text=rec.get("question"),
            extra=rec,
        )

    def stage_problem(self, req: RerankRequest, stored: StoredInput) -> str | None:
        grades = self.grades[req.query.qid]
        drawn = {k: v.tolist() for k, v in self.runner.presentations(req, grades).items()}
        rec = stored.extra
        perms = {k: [r["perm"] for r in rows] for k, rows in rec["variants"].items()}
        if drawn != perms or rec.get("grades", grades.tolist()) != grades.tolist():
            return "the presentations or judgements differ (another robustness block?)"
        return None

    def compute(self, req: RerankRequest) -> dict[str, Any]:
        runner = self.runner
        qid = req.query.qid
        grades = self.grades[qid]
        golds = self.answers[qid]
        docids = [c.docid for c in req.candidates]
        t0 = time.perf_counter()
        variants: dict[str, list[dict[str, Any]]] = {}
        for name, perms in runner.presentations(req, grades).items():
            ps = score_presentations(runner.reranker, req.query, req.candidates, perms)
            rows = []
            for p, perm in enumerate(perms):
                idx = runner._retain(ps.scores[p])
                rows.append(
                    {
                        "perm": [int(i) for i in perm],
                        "scores": [float(s) for s in ps.scores[p]],
                        "retained": [docids[i] for i in idx],
                        "forward_passes": int(ps.forward_passes[p]),
                        "prompt_tokens": int(ps.prompt_tokens[p]),
                        **runner._read(req, idx, golds),
                    }
                )
            variants[name] = rows
        rec = {
            "qid": qid,
            "question": req.query.text,
            "answers": list(golds),
            "docids": docids,
            "grades": [int(g) for g in grades],
            "ideal_grades": ideal_grades(qid, self.qrels).tolist(),
            "control": {"retained": docids, **runner._read(req, range(len(docids)), golds)},
            "variants": variants,
            "seconds": round(time.perf_counter() - t0, 3),
        }
        log.debug("question %s: %.1f s", qid, rec["seconds"])
        return rec

    def write(self, path: Path, record: dict[str, Any], fingerprints: Mapping[str, str]) -> None:
        folder = self.runner.folder
        folder.write_json(path.relative_to(folder.path), {**record, **fingerprints})

    def describe(self) -> dict[str, Any]:
        return {
            "reranker": self.runner.reranker.describe(),
            "reader": self.runner.reader.describe(),
        }
