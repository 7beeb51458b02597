"""Errors the machine or a damaged file causes, told apart from bugs (issue 38, defect 16).

The CLI's top level (:func:`presentation_dependence.cli.main`) asks :func:`environment_problem`
about every exception that is not a :class:`~presentation_dependence.errors.PresdepError`: an
``OSError`` the file system raised (read-only, full, file too large, a file where a folder is
meant, no permission, ...) is an *environment error*, and a file that cannot be deserialised
(a truncated safetensors file, a pickle such as ``optimizer.pt`` cut short, a torch zip without
its central directory) an *input error*. Both exit 2 with the path and a fix; anything else stays
an internal error (exit 3, a bug).

The path is the exception's ``filename`` when it has one; otherwise the file the innermost
reading or writing frame of the traceback held (``torch.load``'s ``f``, safetensors'
``filename``): libraries rarely put the path in their message.
"""

from __future__ import annotations

import errno
import io
import os
import pickle
import zipfile
from pathlib import Path
from types import TracebackType
from typing import Any

__all__ = ["environment_problem", "path_in_traceback"]

# errno -> (what happened, the fix)
_OS_ERRORS: dict[int, tuple[str, str]] = {
    errno.EROFS: ("the file system is read-only", "write to a writable folder, or remount it"),
    errno.ENOSPC: (
        "the disk is full",
        "free space (or point the output at another disk) and rerun the same command: "
        "finished units are kept",
    ),
    errno.EDQUOT: ("the disk quota is used up", "free space or raise the quota, then rerun"),
    errno.EFBIG: (
        "the file is larger than the file system or 'ulimit -f' allows",
        "raise the limit (ulimit -f unlimited) or write to another file system",
    ),
    errno.ENOTDIR: (
        "a part of the path is a file, not a folder",
        "give a folder path (--run-dir, --out name folders)",
    ),
    errno.EEXIST: (
        "a file is in the way of a folder (or a folder of a file)",
        "give a path that is a folder or does not exist yet (--run-dir, --out name folders)",
    ),
    errno.EISDIR: ("a folder where a file is expected", "give the path of a file"),
    errno.EACCES: ("permission denied", "fix the permissions, or use a folder you can write"),
    errno.EPERM: ("operation not permitted", "fix the permissions, or use another folder"),
    errno.ENOENT: ("no such file or folder", "check the path"),
    errno.ENAMETOOLONG: ("the file name is too long", "use a shorter path"),
    errno.EMFILE: ("too many open files", "raise the limit (ulimit -n) and rerun"),
    errno.ENFILE: ("too many open files on the system", "close other programs and rerun"),
    errno.EIO: ("an input/output error of the disk", "check the disk (dmesg), then rerun"),
}

# A path the user gave that does not fit (the rest are the machine's: disk, limits, rights).
_PATH_ERRNOS = frozenset(
    {errno.ENOENT, errno.ENOTDIR, errno.EISDIR, errno.EEXIST, errno.ENAMETOOLONG}
)

# Names a reading or writing function gives the file it works on.
_PATH_LOCALS = ("filename", "f", "file", "path", "checkpoint_file", "resolved_archive_file")


def _as_path(value: Any) -> str | None:
    if isinstance(value, (str, os.PathLike)):
        text = os.fspath(value)
        return str(text) if isinstance(text, str) and ("/" in text or Path(text).exists()) else None
    name = getattr(value, "name", None) if isinstance(value, io.IOBase) else None  # open file
    return name if isinstance(name, str) and name and not name.startswith("<") else None


def path_in_traceback(tb: TracebackType | None) -> str | None:
    """The file the innermost frame of ``tb`` that names one was reading or writing, or None."""
    frames = []
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    for frame in reversed(frames):
        for name in _PATH_LOCALS:
            found = _as_path(frame.f_locals.get(name))
            if found is not None:
                return found
    return None


def _unreadable(e: BaseException) -> bool:
    """A file that exists but cannot be deserialised: truncated, corrupt, not what it claims."""
    if isinstance(e, (pickle.UnpicklingError, zipfile.BadZipFile)):
        return True
    if type(e).__name__ == "SafetensorError":  # safetensors' (no import needed to tell)
        return True
    if isinstance(e, EOFError) and path_in_traceback(e.__traceback__) is not None:
        return True  # pickle's "Ran out of input": an empty or cut file
    return isinstance(e, RuntimeError) and "PytorchStreamReader failed" in str(e)


def environment_problem(e: BaseException) -> str | None:
    """The one-line message of an environment or damaged-file error, or None for anything else
    (a bug). The message names the path and a fix. An error raised ``from`` one (a library
    wrapping the OSError it met) is judged by that cause."""
    seen: BaseException | None = e
    while seen is not None:
        found = _problem(seen)
        if found is not None:
            return found
        seen = seen.__cause__
    return None


def _problem(e: BaseException) -> str | None:
    if isinstance(e, OSError) and e.errno in _OS_ERRORS:
        what, fix = _OS_ERRORS[e.errno]
        path = e.filename or path_in_traceback(e.__traceback__) or "(path not reported)"
        other = f" -> {e.filename2}" if e.filename2 else ""
        kind = "input error" if e.errno in _PATH_ERRNOS else "environment error"
        return f"{kind}: {what} ({e.strerror or e}): {path}{other}. Fix: {fix}"
    if isinstance(e, RuntimeError) and "PytorchStreamWriter failed" in str(e):
        path = path_in_traceback(e.__traceback__) or "(path not reported)"
        return (
            f"environment error: writing {path} failed ({str(e).splitlines()[0]}): usually a "
            "full disk or a file-size limit. Fix: free space or raise the limit, then rerun"
        )
    if _unreadable(e):
        path = path_in_traceback(e.__traceback__) or "(path not reported)"
        detail = str(e).splitlines()[0][:200] if str(e) else "empty"
        return (
            f"input error: {path} cannot be read ({type(e).__name__}: {detail}): the file is "
            "truncated or corrupt (a copy or a save cut short). Fix: restore or re-create it "
            "(a checkpoint: delete that checkpoint folder to resume from the one before, or "
            "--restart; an adapter: copy it again or retrain)"
        )
    return None
