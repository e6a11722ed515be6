"""JSON-lines input with line numbers, and output files that never look complete when they are not.

Input lines are checked strictly (UTF-8, finite numbers, no lone surrogates) so that a bad line
stops with its file and number instead of a traceback later; output is strict JSON (no bare
``NaN``) and lands with the permissions the user's umask gives, readable by the group on a shared
file system.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import re
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from lie.core.errors import LieError
from lie.formats.atomic import fsync_folder, refuse_special

FIX = "fix or remove that line"
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]", re.ASCII)
MAX_DEPTH = 100  # JSON nesting: deeper would exhaust Python's stack in the parser or any reader after it
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)


def nesting_depth(text: str) -> int:
    """How deep arrays and objects nest in the JSON ``text`` (strings skipped); cheap when shallow."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return 0
    depth = deepest = 0
    for char in re.sub(r"[^\[\]{}]", "", _STRING.sub("", text)):
        depth += 1 if char in "[{" else -1
        deepest = max(deepest, depth)
    return deepest


class _BadNumber(ValueError):
    """A number JSON allows but Python cannot hold faithfully (NaN, overflow, too many digits)."""


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _BadNumber(f"the number {text} overflows a float")
    return value


def _bounded_int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise _BadNumber(
            f"an integer of {len(text.lstrip('-'))} digits (Python reads at most {sys.get_int_max_str_digits()})"
        ) from None


def _no_constant(text: str) -> Any:
    raise _BadNumber(f"{text} is not a finite number (and not standard JSON)")


def _lone_surrogate(obj: Any) -> bool:
    if isinstance(obj, str):
        return any(0xD800 <= ord(c) <= 0xDFFF for c in obj)
    if isinstance(obj, dict):
        return any(_lone_surrogate(k) or _lone_surrogate(v) for k, v in obj.items())
    if isinstance(obj, list):
        return any(_lone_surrogate(v) for v in obj)
    return False


def _keys_once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are all different: ``{"correct": false, "correct": true}`` is refused
    (Python's reader keeps the last silently; another reader might keep the first)."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        twice = next(key for key, _ in pairs if key in seen or seen.add(key))  # type: ignore[func-returns-value]
        raise _BadNumber(f"key {twice!r} appears twice in one object")
    return obj


def loads_line(line: str | bytes, where: str) -> Any:
    """One JSON value, strictly: ``where`` ("file line N") starts every error message."""
    if isinstance(line, bytes):
        raw = line
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            bad = raw[exc.start : exc.start + 1].hex()
            raise LieError(
                f"{where}: not valid UTF-8 (byte 0x{bad} at column {exc.start + 1}); save the file as UTF-8"
            ) from None
    if nesting_depth(line) > MAX_DEPTH:
        raise LieError(f"{where}: JSON nested deeper than {MAX_DEPTH} levels; {FIX}")
    try:
        obj = json.loads(
            line,
            parse_float=_finite_float,
            parse_int=_bounded_int,
            parse_constant=_no_constant,
            object_pairs_hook=_keys_once,
        )
    except _BadNumber as exc:
        raise LieError(f"{where}: {exc}; {FIX}") from None
    except json.JSONDecodeError as exc:
        raise LieError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno}); {FIX}") from None
    if _SURROGATE_ESCAPE.search(line) and _lone_surrogate(obj):
        raise LieError(f"{where}: a lone surrogate escape (\\ud800-\\udfff) is not text; {FIX}")
    return obj


MAX_LINE_BYTES = 64 << 20  # one JSON line (a generation with its token ids is well under 1 MiB)
_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISSOCK, "a socket"))  # fmt: skip


def open_input(path: str | os.PathLike[str], what: str = "") -> IO[bytes]:
    """A named input opened for reading, refused in one line unless it is a regular file.

    A device (``/dev/zero``, ``/dev/urandom``) never ends, and a FIFO without a writer never even
    opens: the file is opened without blocking and its kind read from the open descriptor (no race
    with a rename). ``what`` names the file in errors ("cannot read the config file <path>: ...").
    """
    label = f"{what} {path}" if what else str(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise LieError(f"cannot read {label}: {exc.strerror or exc}") from None
    kind = next((name for test, name in _KINDS if test(os.fstat(fd).st_mode)), None)
    if kind is not None:
        os.close(fd)
        raise LieError(f"cannot read {label}: it is {kind}, not a regular file")
    if hasattr(os, "set_blocking"):
        os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def read_bounded(path: str | os.PathLike[str], limit: int, what: str = "") -> bytes:
    """The whole of a regular file (:func:`open_input`) of at most ``limit`` bytes, else one line."""
    label = f"{what} {path}" if what else str(path)
    with open_input(path, what) as handle:
        try:
            data = handle.read(limit + 1)
        except OSError as exc:
            raise LieError(f"cannot read {label}: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise LieError(f"{label}: larger than {limit:,} bytes; is it the right file?")
    return data


def _open_input(path: str) -> IO[bytes]:
    return sys.stdin.buffer if path == "-" else open_input(path)


def _bounded_lines(handle: IO[bytes], name: str) -> Iterator[tuple[int, bytes]]:
    """(number, line) of every line, none longer than :data:`MAX_LINE_BYTES` (standard input may be a
    device too: ``--in - < /dev/zero`` is one line that never ends)."""
    lineno = 0
    while True:
        try:
            line = handle.readline(MAX_LINE_BYTES + 1)
        except OSError as exc:
            raise LieError(f"cannot read {name}: {exc.strerror or exc}") from None
        if not line:
            return
        lineno += 1
        if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
            raise LieError(
                f"{name} line {lineno}: longer than {MAX_LINE_BYTES:,} bytes without a line break; "
                "is it a JSON-lines file?"
            )
        yield lineno, line


def read_jsonl(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for every non-blank line; a bad line names its number."""
    name = "<stdin>" if str(path) == "-" else str(path)
    handle = _open_input(str(path))
    try:
        for lineno, line in _bounded_lines(handle, name):
            if not line.strip():
                continue
            obj = loads_line(line, f"{name} line {lineno}")
            if not isinstance(obj, dict):
                raise LieError(f"{name} line {lineno}: expected a JSON object, got {type(obj).__name__}")
            yield lineno, obj
    finally:
        if handle is not sys.stdin.buffer:
            handle.close()


def _current_umask() -> int:
    """The process's umask, read without changing it where Linux says it (/proc), else set and reset."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def default_mode(directory: bool = False) -> int:
    """The mode ``open``/``mkdir`` would give a new file or folder (``mkstemp``/``mkdtemp`` give 0600/0700)."""
    return (0o777 if directory else 0o666) & ~_current_umask()


def share_tree(root: str | os.PathLike[str]) -> None:
    """Give ``root`` and everything under it the modes the umask gives (safetensors writes 0600).

    Execute bits stay as they are; symbolic links (a model linked from the hub cache) are not followed.
    """
    file_mode, dir_mode = default_mode(), default_mode(directory=True)
    for path in [Path(root), *Path(root).rglob("*")]:
        if path.is_symlink():
            continue
        if path.is_dir():
            path.chmod(dir_mode)
        else:
            path.chmod(file_mode | (path.stat().st_mode & 0o111 & dir_mode))


def _temporary_beside(target: Path) -> tuple[int, str]:
    """A temporary file in ``target``'s folder with the umask's mode; an unwritable place is a LieError."""
    import tempfile  # here, not at the top: with random and shutil, it would weigh on every lie start

    refuse_special(target)
    if target.is_dir():
        raise LieError(f"cannot write {target}: it is a folder; give a file name")
    if target.parent.exists() and not target.parent.is_dir():
        raise LieError(f"cannot write {target}: {target.parent} is a file, not a folder")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent)
    except OSError as exc:
        raise LieError(f"cannot write {target}: {exc.strerror or exc}") from None
    with contextlib.suppress(OSError):  # some network file systems refuse chmod: keep mkstemp's mode
        os.fchmod(fd, default_mode())
    return fd, tmp


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike[str], mode: str = "w") -> Iterator[IO[Any]]:
    """Write to a temporary file beside ``path``, flush it to disk, and rename it into place only on success.

    The rename is made durable too (the folder is fsynced), so a crash never leaves an empty or
    short file under the final name. A symlink, FIFO or device at ``path`` is refused, never
    replaced. A write that fails (disk full) is a LieError naming ``path``. ``-`` buffers in
    memory and writes to standard output at the end, so that a failure half-way leaves no
    partial output anywhere.
    """
    if str(path) == "-":
        buffer: io.StringIO | io.BytesIO = io.StringIO() if "b" not in mode else io.BytesIO()
        yield buffer
        if isinstance(buffer, io.BytesIO):  # "b" in mode
            sys.stdout.buffer.write(buffer.getvalue())
            sys.stdout.buffer.flush()
        else:
            sys.stdout.write(buffer.getvalue())
            sys.stdout.flush()
        return
    target = Path(path)
    fd, tmp = _temporary_beside(target)
    try:
        with os.fdopen(fd, mode, encoding=None if "b" in mode else "utf-8") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
        fsync_folder(target.parent)
    except OSError as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if exc.filename is None:
            raise LieError(f"cannot write {target}: {exc.strerror or exc}") from None
        raise
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _non_finite(obj: Any, path: str = "") -> tuple[str, float] | None:
    """The first key path (``a.b[2]``) that holds NaN or infinity, and that value."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return path, obj
    if isinstance(obj, dict):
        children = ((f"{path}.{k}" if path else str(k), v) for k, v in obj.items())
    elif isinstance(obj, (list, tuple)):
        children = ((f"{path}[{i}]", v) for i, v in enumerate(obj))
    else:
        return None
    for child_path, value in children:
        found = _non_finite(value, child_path)
        if found:
            return found
    return None


def dumps(obj: Any, **kwargs: Any) -> str:
    """Strict JSON, unicode kept readable: NaN or infinity is a LieError naming its key, never bare NaN."""
    try:
        return json.dumps(obj, ensure_ascii=False, allow_nan=False, **kwargs)
    except ValueError:
        found = _non_finite(obj)
        if found is None:
            raise
        raise LieError(
            f"field '{found[0]}' is {found[1]}, not a finite number; JSON cannot hold it"
        ) from None
