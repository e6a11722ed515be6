"""What a command may write, in one place (docs/recovery.md, "What lie writes").

A command writes only its own outputs: it refuses an output path that is an input (compared by
``realpath``: :func:`lie.formats.overlap.refuse_overlap`), a symbolic link, a FIFO, a device or socket, or an existing non-empty folder that
carries no ownership marker (:data:`OWNER`, written into every folder a command builds). Folders
are built beside their place and swapped in whole (:func:`replace_folder`); files go through
:func:`lie.formats.jsonl.atomic_output`. A finished piece of work (a shard, a checkpoint) carries a
seal, :func:`seal`, written last with the size (and, for small files, the digest) of every file,
and is trusted only when :func:`seal_problem` finds nothing wrong.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from lie.core.errors import LieError
from lie.formats.atomic import fsync_folder, refuse_special
from lie.formats.jsonl import atomic_output, dumps, loads_line, share_tree
from lie.formats.overlap import Labelled, inside, refuse_overlap

log = logging.getLogger(__name__)

OWNER = "lie_output.json"  # in every folder a command builds: it may replace that folder later
DIGEST_LIMIT = 64 << 20  # files up to this size are digested in a seal; larger ones by size only


def check_output_file(out: str | os.PathLike[str], inputs: Labelled = (), label: str = "--out") -> None:
    """Before any work: ``out`` can be written as a new file and :func:`refuse_overlap` finds it apart
    from every input (``--out <model>/model.safetensors`` would overwrite the model)."""
    if os.fspath(out) == "-":
        return
    refuse_special(out)
    if os.path.isdir(out):
        raise LieError(f"cannot write {out}: it is a folder; give a file name")
    refuse_overlap({label: out}, inputs)
    parent = os.path.dirname(os.path.abspath(out))
    if os.path.exists(parent) and not os.path.isdir(parent):
        raise LieError(f"cannot write {out}: {parent} is a file, not a folder")


RECORD_LIMIT = 16 << 20  # a record, manifest or seal lie writes is far smaller: a larger file is not one


def read_object(path: str | os.PathLike[str]) -> tuple[dict[str, Any] | None, str]:
    """The JSON object in the regular file ``path`` read strictly and bounded (size, nesting), or None and
    why not: a file lie wrote as a record, manifest or seal is such an object."""
    where = os.fspath(path)
    try:
        if not stat.S_ISREG(os.stat(where).st_mode):
            return None, "not a regular file"
        with open(where, "rb") as handle:
            data = handle.read(RECORD_LIMIT + 1)
    except OSError as exc:
        return None, f"unreadable: {exc.strerror or exc}"
    if len(data) > RECORD_LIMIT:
        return None, f"larger than {RECORD_LIMIT:,} bytes"
    try:
        value = loads_line(data, where)
    except LieError as exc:
        return None, str(exc).removeprefix(f"{where}: ").split("; ")[0]
    if not isinstance(value, dict):
        return None, f"a JSON {_json_kind(value)}, not an object"
    return value, ""


def _json_kind(value: Any) -> str:
    kinds = {list: "list", str: "string", bool: "boolean", type(None): "null"}
    return kinds.get(type(value), "number")


def record_problem(folder: str | os.PathLike[str]) -> str | None:
    """Why ``folder``'s :data:`OWNER` is not a record lie writes, or None when it is one: a JSON object
    with a ``command`` and, where it has them (all but records of older code), the ``files`` lie wrote
    as a list of names. A file of that name the user copied or made is no claim on the folder."""
    record, why = read_object(Path(folder) / OWNER)
    if record is None:
        return why
    if not isinstance(record.get("command"), str) or not record["command"]:
        return "no command"
    files = record.get("files", [])
    if not isinstance(files, list) or not all(isinstance(name, str) for name in files):
        return "its files are not a list of names"
    return None


def owned(folder: str | os.PathLike[str], legacy: str | None = None) -> bool:
    """``folder`` holds a record lie writes (:func:`record_problem`), or the ``legacy`` marker older code
    wrote (a JSON object)."""
    if os.path.lexists(Path(folder) / OWNER):
        return record_problem(folder) is None
    return bool(legacy) and read_object(Path(folder) / str(legacy))[0] is not None


def check_output_folder(
    out: str | os.PathLike[str],
    inputs: Labelled = (),
    legacy: str | None = None,
) -> None:
    """Before any work: ``out`` is absent, empty, or a folder a command built whose record lists the files
    it wrote, and nothing else is there. A folder of older lie (a record without its files, or only
    ``legacy``) is refused: its files cannot be told from the user's.

    An input inside ``out`` is refused too: replacing ``out`` would remove it.
    """
    refuse_special(out)
    path = Path(out)
    refuse_overlap({"--out": out}, inputs)
    if path.exists() and not path.is_dir():
        raise LieError(f"cannot write the folder {out}: it is a file; give a new folder")
    if path.is_dir() and os.path.lexists(path / OWNER) and record_problem(path):
        raise LieError(
            f"{out} is not a folder lie built ({OWNER} in it is not lie's record: {record_problem(path)}): "
            "give a new or empty folder, lie replaces only folders it built"
        )
    if path.is_dir() and any(path.iterdir()) and not owned(path, legacy):
        raise LieError(
            f"{out} is a folder lie did not make (no {OWNER} in it) and is not empty: "
            "give a new or empty folder, lie replaces only folders it built"
        )
    if path.is_dir() and any(path.iterdir()) and _listed_files(path) is None:
        raise LieError(
            f"{out} was built by an older lie, whose record does not list its files: lie cannot tell them "
            f"from yours, so it replaces nothing there; if nothing of yours is in it, delete {out} and rerun"
        )
    if path.is_dir() and os.path.lexists(path / OWNER):
        foreign = _foreign_files(path)
        if foreign:
            shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
            raise LieError(
                f"{out} holds files lie did not write ({shown}): move them out first, "
                "lie replaces only what it built"
            )


def _written(folder: Path, relative_to: Path | None = None) -> list[str]:
    """Every file under ``folder`` (relative to it or to ``relative_to``, sorted) but the owner record."""
    base = relative_to or folder
    return sorted(p.relative_to(base).as_posix() for p in folder.rglob("*")
                  if (p.is_file() or p.is_symlink()) and p.name != OWNER)  # fmt: skip


def files_under(folder: str | os.PathLike[str], patterns: Iterable[str]) -> list[str]:
    """The files that ``patterns`` (globs relative to ``folder``) match, and those under the folders they
    match, relative to ``folder`` as records list them."""
    folder = Path(folder)
    found: set[str] = set()
    for pattern in patterns:
        for path in folder.glob(pattern):
            if path.is_dir() and not path.is_symlink():
                found.update(_written(path, folder))
            else:
                found.add(path.relative_to(folder).as_posix())
    found.discard(OWNER)
    return sorted(found)


def write_record(folder: str | os.PathLike[str], record: dict[str, Any], files: Iterable[str]) -> None:
    """Mark ``folder``, which lie fills in place (``lie preflight``'s trials), as lie's: :data:`OWNER`
    holds ``record`` and the ``files`` lie wrote there (names as :func:`files_under` gives them);
    rewritten as more are written, so that a rebuild (:func:`check_output_folder`) knows which files are
    lie's and refuses any other."""
    record = {**record, "files": sorted(set(files))}
    with atomic_output(Path(folder) / OWNER) as out:
        out.write(dumps(record, indent=2, sort_keys=True) + "\n")


def record_of(folder: str | os.PathLike[str]) -> dict[str, Any]:
    """The record a command left in the folder it built (:data:`OWNER`); {} where none is readable."""
    return read_object(Path(folder) / OWNER)[0] or {}


def _listed_files(folder: Path) -> list[str] | None:
    """The files lie wrote in ``folder`` as its record lists them; None where the record lists none (older
    code's, or only the ``legacy`` marker): then no file there can be told apart from a user's."""
    files = record_of(folder).get("files")
    return files if isinstance(files, list) else None


def _foreign_files(folder: Path) -> list[str]:
    """Files in a lie-built ``folder`` that its record does not list."""
    listed = set(_listed_files(folder) or [])
    return [name for name in _written(folder) if name not in listed]


_BUILDING: dict[Path, Any] = {}  # a partial folder -> its open, locked ``.<name>.lock``


def partial_folder(out: str | os.PathLike[str]) -> Path:
    """An empty building folder beside ``out`` (``.<name>.partial``), this process's alone until
    :func:`replace_folder`: a second build of the same ``out`` stops with one line (``flock`` on
    ``.<name>.lock``, which the system releases however the holder ends).

    The folder carries lie's record (:data:`OWNER`, naming ``out``) from its first moment, put in place
    by a rename: a stale one a killed build left is removed; anything else of that name (a folder or file
    of the user's, or a partial folder of older code) is refused with one line and left as it is.
    """
    import fcntl
    import shutil
    import tempfile

    target = Path(os.path.abspath(out))
    tmp = target.with_name(f".{target.name}.partial")
    lock = target.with_name(f".{target.name}.lock")
    refuse_special(tmp)
    refuse_special(lock)
    target.parent.mkdir(parents=True, exist_ok=True)
    handle = open(lock, "a+", encoding="utf-8")  # noqa: SIM115 (held until replace_folder or exit)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        raise LieError(
            f"{out} is being built by another command (lock {lock}); wait for it to finish"
        ) from None
    except OSError as exc:  # a file system without locks: go on, say so
        log.warning("cannot lock %s (%s): a second build of %s would not be stopped", lock, exc, out)
    if os.path.lexists(tmp):
        problem = _partial_problem(tmp, target)
        if problem:
            handle.close()
            raise LieError(
                f"{tmp} is not a folder lie is building ({problem}): lie builds {out} under that name; "
                "move it away (or delete it, if a build of older lie left it)"
            )
        shutil.rmtree(tmp)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent))
    marker = {"command": "building", "building": str(target), "pid": os.getpid()}
    (staging / OWNER).write_text(dumps(marker) + "\n", encoding="utf-8")
    os.rename(staging, tmp)  # a kill before this leaves a hidden temporary, never a nameless .partial
    _BUILDING[tmp] = handle
    return tmp


def _partial_problem(tmp: Path, target: Path) -> str | None:
    """Why ``tmp`` (``.<name>.partial`` of ``target``) is no building folder of lie's, or None when it is."""
    if tmp.is_symlink() or not tmp.is_dir():
        return "it is not a folder"
    if record_problem(tmp):
        return f"no record of lie's building {target.name} in it"
    if record_of(tmp).get("building") != str(target):
        return f"its record names no build of {target}"
    return None


def _release(tmp: Path, target: Path, legacy: str | None = None) -> None:
    """After a swap: old copies torn swaps left (``.<name>.old-PID``: a folder lie built, by its record)
    and the lock go; a folder of the user's of such a name stays."""
    import shutil

    for old in target.parent.glob(f".{target.name}.old-*"):
        ours = old.is_dir() and not old.is_symlink() and owned(old, legacy)
        if ours and _listed_files(old) is not None and not _foreign_files(old):
            shutil.rmtree(old, ignore_errors=True)
    handle = _BUILDING.pop(tmp, None)
    if handle is not None:
        target.with_name(f".{target.name}.lock").unlink(missing_ok=True)
        handle.close()


def _fsync_tree(root: Path) -> None:
    for path in sorted(root.rglob("*"), reverse=True):
        if path.is_file() and not path.is_symlink():
            with open(path, "rb") as handle:
                os.fsync(handle.fileno())
        elif path.is_dir() and not path.is_symlink():
            fsync_folder(path)
    fsync_folder(root)


def replace_folder(
    tmp: Path, out: str | os.PathLike[str], record: dict[str, Any], legacy: str | None = None
) -> Path:
    """Swap the built folder ``tmp`` in as ``out``, marked as lie's (:data:`OWNER` holds ``record``).

    The old ``out`` (checked again: lie's, or empty) is removed only after the new one is in place.
    """
    import shutil

    target = Path(os.path.abspath(out))
    check_output_folder(target, legacy=legacy)
    record = {**record, "files": _written(tmp)}  # what lie wrote: a rebuild replaces these and no other
    (tmp / OWNER).write_text(dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    share_tree(tmp)  # the group reads the weights too (safetensors writes 0600)
    _fsync_tree(tmp)
    old = None
    if target.exists():
        old = target.with_name(f".{target.name}.old-{os.getpid()}")
        os.replace(target, old)
    os.replace(tmp, target)
    fsync_folder(target.parent)
    if old is not None:
        shutil.rmtree(old)
    _release(tmp, target, legacy)
    return target


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """Ctrl-C and SIGTERM wait until the block ends (a few renames that must happen all or none): one
    that arrives meanwhile is noted, and its handler runs right after the block (raising, as ever,
    KeyboardInterrupt or lie's Terminated). Outside the main thread, where no handler runs, a no-op."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    arrived: list[int] = []
    held = (signal.SIGINT, signal.SIGTERM)
    handlers = {number: signal.signal(number, lambda n, frame: arrived.append(n)) for number in held}
    try:
        yield
    finally:
        for number, handler in handlers.items():
            signal.signal(number, handler)
    for signum in arrived[:1]:
        handler = handlers[signal.Signals(signum)]
        if callable(handler):
            handler(signum, None)
        elif handler == signal.SIG_DFL:
            signal.raise_signal(signum)


@contextlib.contextmanager
def hold(lock_file: Path, what: str, name: str) -> Iterator[None]:
    """One command at a time on ``name`` (``lie <what>``); another one stops with a line naming the holder.

    ``flock``: the operating system releases it when the holder exits, however it exits (a kill too).
    """
    import fcntl
    import socket
    import time

    with open(lock_file, "a+", encoding="utf-8") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            raise LieError(
                f"{name} is in use by {holder} (lock {lock_file}); wait for it to finish, or stop it first"
            ) from None
        except OSError as exc:  # a file system without locks (some parallel file systems): go on, say so
            log.warning(
                "cannot lock %s (%s): a second command on %s would not be stopped", lock_file, exc, name
            )
        handle.seek(0)
        handle.truncate()
        started = time.strftime("%Y-%m-%d %H:%M:%S")
        handle.write(f"`lie {what}` (pid {os.getpid()} on {socket.gethostname()}, since {started})\n")
        handle.flush()
        try:
            yield
        finally:
            handle.seek(0)
            handle.truncate()
            handle.flush()


# Seals: a finished piece of work, verified before it is trusted ---------------------------------


def _digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _entry(path: Path) -> dict[str, Any]:
    size = path.stat().st_size
    entry: dict[str, Any] = {"bytes": size}
    if size <= DIGEST_LIMIT:
        entry["sha256"] = _digest(path)
    return entry


def seal(seal_file: Path, files: Iterable[Path], extra: dict[str, Any] | None = None) -> None:
    """Record ``files`` (sizes; digests up to :data:`DIGEST_LIMIT`) in ``seal_file``, written last.

    Paths are kept relative to the seal's folder; each file is flushed to disk before the seal.
    """
    base = seal_file.parent
    entries = {}
    for path in sorted(files):
        with open(path, "rb") as handle:
            os.fsync(handle.fileno())
        entries[path.relative_to(base).as_posix()] = _entry(path)
    with atomic_output(seal_file) as out:
        out.write(dumps({"files": entries, **(extra or {})}, indent=1, sort_keys=True) + "\n")


def read_seal(seal_file: Path) -> dict[str, Any] | None:
    """The seal's record, or None when it is absent or unreadable (then nothing it names is trusted)."""
    record, _ = read_object(seal_file)  # bounded: a deep or huge seal is unreadable, not a traceback
    files = record.get("files") if record is not None else None
    return record if isinstance(files, dict) and files else None


def seal_problem(seal_file: Path) -> str | None:
    """Why the work ``seal_file`` vouches for cannot be trusted (no seal, a file missing, shorter,
    or changed), or None when every file is as sealed."""
    record = read_seal(seal_file)
    if record is None:
        return f"no readable {seal_file.name}"
    base = seal_file.parent
    for name, entry in record["files"].items():
        path = base / name
        try:
            if not isinstance(entry, dict) or not inside(path, base):
                return f"{seal_file.name} is malformed"
            size = path.stat().st_size
        except ValueError:  # a name with a NUL byte
            return f"{seal_file.name} is malformed"
        except OSError:
            return f"{name} is missing"
        sealed = entry.get("bytes")
        if type(sealed) is not int or size != sealed:
            return f"{name} has {size} bytes, sealed with {sealed}"
        if "sha256" not in entry and size <= DIGEST_LIMIT:  # seal() digests every file this small
            return f"{name} is sealed without its sha256"
        if "sha256" in entry and _digest(path) != entry["sha256"]:
            return f"{name} changed since it was sealed"
    return None
