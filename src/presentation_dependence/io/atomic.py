"""Atomic file writes: a reader sees the old file or the new one, never half of one.

The data goes to a temporary file in the destination folder (same file system), is flushed and
fsynced, and then moved over the destination with :func:`os.replace`, which is atomic on POSIX and
Windows. Parent folders are created. On any error the temporary file is removed and the
destination is left untouched; an ``OSError`` that names no file (a full disk during the write)
is raised again naming the destination.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

__all__ = ["atomic_write_bytes", "atomic_write_text"]


def _read_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# mkstemp creates files with mode 0600; give the result the mode a plain open() would.
_UMASK = _read_umask()


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically; return the path written."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        mode = target.stat().st_mode & 0o7777 if target.exists() else 0o666 & ~_UMASK
        if hasattr(os, "fchmod"):
            os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        Path(tmp).replace(target)  # os.replace: atomic on the same file system
    except BaseException as e:
        with contextlib.suppress(FileNotFoundError):
            Path(tmp).unlink()
        if isinstance(e, OSError) and e.errno is not None and e.filename is None:  # ENOSPC
            raise OSError(e.errno, e.strerror, str(target)) from e
        raise
    _fsync_dir(target.parent)
    return target


def atomic_write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` (UTF-8, ``\\n`` line ends as given) to ``path`` atomically."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def _fsync_dir(folder: Path) -> None:
    """Persist the rename itself where the platform allows it (POSIX); ignore elsewhere."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
