"""The study sequencer (``studies/sequencer.py``): a step that waits for another lane's file."""

from __future__ import annotations

import sys
import threading
import time

from presentation_dependence.studies import sequencer
from presentation_dependence.studies.plan import Step
from presentation_dependence.studies.sequencer import run_steps


def test_a_step_waits_for_the_file_of_another_lane(tmp_path, monkeypatch, caplog) -> None:
    monkeypatch.setattr(sequencer, "WAIT_POLL_S", 0.01)
    silver, out = tmp_path / "silver.jsonl", tmp_path / "student.txt"
    # The step copies the file it waits for: it fails if it runs before the file is there.
    copy = f"import shutil; shutil.copy({str(silver)!r}, {str(out)!r})"
    step = Step("train", [sys.executable, "-c", copy], done=str(out), wait_for=str(silver))

    def other_lane() -> None:
        time.sleep(0.3)
        silver.write_text("labels\n", encoding="utf-8")

    writer = threading.Thread(target=other_lane)
    with caplog.at_level("INFO"):
        writer.start()
        assert run_steps([step]) == 0
    writer.join()
    assert out.read_text(encoding="utf-8") == "labels\n"
    assert f"train waits for {silver}" in caplog.text


def test_a_step_with_its_file_present_does_not_wait(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(sequencer, "WAIT_POLL_S", 3600.0)  # a wait would hang the test
    ready = tmp_path / "ready"
    ready.write_text("", encoding="utf-8")
    step = Step("echo", [sys.executable, "-c", "pass"], wait_for=str(ready))
    assert run_steps([step]) == 0
