"""Advisory file locks for run folders shared by several processes.

:func:`file_lock` holds an exclusive lock on a lock file for the duration of a ``with`` block
(``flock`` on POSIX, ``msvcrt.locking`` on Windows). The operating system releases it when the
process ends, however it ends, so a killed process never leaves a folder locked. With
``blocking=False`` the block is entered at once and told whether the lock was taken.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["file_lock"]


def _try_lock(fd: int, blocking: bool) -> bool:
    if fcntl is not None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        except BlockingIOError:
            return False
        return True
    import msvcrt  # pragma: no cover - Windows

    while True:  # pragma: no cover - Windows
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
            return True
        except OSError:
            if not blocking:
                return False
            import time

            time.sleep(0.05)


def _unlock(fd: int) -> None:
    if fcntl is not None:
        fcntl.flock(fd, fcntl.LOCK_UN)
    else:  # pragma: no cover - Windows
        import msvcrt

        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)


def _still_named(fd: int, path: Path) -> bool:
    """Whether ``path`` still names the file ``fd`` locked: a holder that deletes its lock file
    on release (:meth:`RunFolder.claim`) leaves a waiter holding a lock on a file no name leads
    to, which a newcomer would not see."""
    try:
        now, locked = path.stat(), os.fstat(fd)
    except FileNotFoundError:
        return False
    return (now.st_dev, now.st_ino) == (locked.st_dev, locked.st_ino)


@contextlib.contextmanager
def file_lock(path: str | Path, *, blocking: bool = True) -> Iterator[bool]:
    """Lock ``path`` (created if missing) exclusively; yield whether the lock is held."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        held = _try_lock(fd, blocking)
        if not held or _still_named(fd, path):
            break
        _unlock(fd)  # its holder deleted it while we waited: lock the file now named so
        os.close(fd)
    try:
        yield held
    finally:
        if held:
            _unlock(fd)
        os.close(fd)
