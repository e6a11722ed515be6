"""JSON-lines input with line numbers, and output files that never look complete when they are not."""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from lie.errors import LieError


def _open_input(path: str) -> IO[str]:
    if path == "-":
        return sys.stdin
    try:
        return open(path, encoding="utf-8")
    except OSError as exc:
        raise LieError(f"cannot read {path}: {exc.strerror}") from None


def read_jsonl(path: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for every non-blank line; a bad line names its number."""
    name = "<stdin>" if path == "-" else path
    handle = _open_input(path)
    try:
        for lineno, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise LieError(f"{name} line {lineno}: not valid JSON ({exc.msg})") from None
            if not isinstance(obj, dict):
                raise LieError(f"{name} line {lineno}: expected a JSON object, got {type(obj).__name__}")
            yield lineno, obj
    finally:
        if handle is not sys.stdin:
            handle.close()


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike[str], mode: str = "w") -> Iterator[IO[Any]]:
    """Write to a temporary file beside ``path`` and rename it into place only on success.

    ``-`` buffers in memory and writes to standard output at the end, so that a failure
    half-way leaves no partial output anywhere.
    """
    if str(path) == "-":
        buffer: IO[Any] = io.StringIO() if "b" not in mode else io.BytesIO()
        yield buffer
        out = sys.stdout.buffer if "b" in mode else sys.stdout
        out.write(buffer.getvalue())
        out.flush()
        return
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent)
    try:
        with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as handle:
            yield handle
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def dumps(obj: Any) -> str:
    """One JSON line, unicode kept readable."""
    return json.dumps(obj, ensure_ascii=False)
