"""The two file-system steps beneath every write of lie (the atomic files of ``lie.formats.jsonl``, the
folders, records and seals of ``lie.formats.outputs``): a special file in an output's place is refused,
never written through or replaced, and a rename is made durable.
"""

from __future__ import annotations

import contextlib
import os
import stat

from lie.core.errors import LieError


def _kind(mode: int) -> str | None:
    """What a path is when it is nothing a command may write over."""
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return None


def refuse_special(path: str | os.PathLike[str]) -> None:
    """A symlink, FIFO, device or socket at ``path`` is a LieError: writing would replace (or hang on) it.

    ``path`` is looked at as the system will open it: ``DIR/LINK/../name`` is ``name`` beside where
    LINK points, never ``DIR/name`` (no ``normpath`` first)."""
    path = os.fspath(path)
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return
    kind = _kind(mode)
    if kind:
        raise LieError(
            f"cannot write {path}: it is {kind}; lie writes only files it creates, give another path"
        )


def fsync_folder(folder: str | os.PathLike[str]) -> None:
    """Make a rename in ``folder`` durable (a crash after it cannot undo it); a no-op where unsupported."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
