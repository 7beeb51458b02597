"""File locks and run-folder claims: one holder at a time, named to whoever is refused."""

from __future__ import annotations

import os
import threading
import time

from presentation_dependence.io.lock import file_lock
from presentation_dependence.runners.run_folder import RunFolder


def test_a_waiter_whose_lock_file_was_deleted_locks_the_file_now_named(tmp_path):
    """A claim deletes its lock file on release; the waiter that then gets the lock must hold
    the file the name leads to, or a newcomer creates another and both hold "the" lock."""
    path = tmp_path / "x.lock"
    waiting, got = threading.Event(), threading.Event()
    done = threading.Event()

    def waiter() -> None:
        waiting.set()
        with file_lock(path) as held:
            assert held
            got.set()
            done.wait(5)

    with file_lock(path) as held:
        assert held
        t = threading.Thread(target=waiter)
        t.start()
        waiting.wait(5)
        time.sleep(0.3)  # the waiter has opened the file and blocks in flock
        path.unlink()  # as RunFolder.claim tidies up, while the waiter blocks
    assert got.wait(5)
    with file_lock(path, blocking=False) as newcomer:
        assert not newcomer
    done.set()
    t.join()


def test_a_refused_claim_names_its_holder(tmp_path):
    folder = RunFolder(tmp_path)
    assert folder.claim_holder("k") == "another process"
    with folder.claim("k") as held:
        assert held
        with folder.claim("k") as second:
            assert not second
        holder = folder.claim_holder("k")
    assert holder.startswith(f"process {os.getpid()} on ") and " since " in holder
    assert not list((tmp_path / ".locks").glob("*.lock"))  # tidied away
