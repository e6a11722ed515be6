"""The errors the CLI turns into one line (``lie CMD: error: ...``) and exit status 2.

``LieError`` is bad input (config, data row, model output). ``describe`` recognises the failures
of the environment that are not bugs either (no network, a file that cannot be read or written),
so that the user sees what to do instead of a traceback from deep inside a library.
"""

from __future__ import annotations

import errno
import socket
import sys
from collections.abc import Iterator
from typing import Any, cast
from urllib.parse import urlsplit

OFFLINE_HINT = (
    "without network, set HF_HUB_OFFLINE=1 and fill the hub cache (HF_HOME) on a connected machine first, "
    "or give a local copy (a model's path:, a data set's local:)"
)


class LieError(Exception):
    """Bad input (config, data row, model output): the message names the file, key or row."""


class Terminated(KeyboardInterrupt):
    """SIGTERM (Slurm's time limit, ``scancel``, ``kill``) raised where the program is, as Ctrl-C raises
    KeyboardInterrupt: every cleanup that runs on an interrupt (an all-or-none swap put back, a
    temporary removed) runs on it too. Python's default for SIGTERM ends the process without any."""


def raise_terminated(signum: int, frame: object) -> None:
    """The SIGTERM handler of every ``lie`` command (``lie.cli``)."""
    raise Terminated()


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        yield cause
        cause = cause.__cause__ or cause.__context__


def _network_types() -> tuple[type[BaseException], ...]:
    """Connection failures of the HTTP clients already imported (never imports one itself)."""
    types: list[type[BaseException]] = [socket.gaierror, ConnectionRefusedError, ConnectionResetError]
    if "httpx" in sys.modules:
        types.append(sys.modules["httpx"].TransportError)
    if "requests" in sys.modules:
        exceptions = sys.modules["requests"].exceptions
        types += [exceptions.ConnectionError, exceptions.Timeout]
    return tuple(types)


def _request_url(exc: BaseException) -> str | None:
    try:
        request = cast(Any, exc).request  # httpx raises RuntimeError when the error carries no request
    except (AttributeError, RuntimeError):
        return None
    url = getattr(request, "url", None)
    return str(url) if url is not None else None


def hub_target(url: str) -> str:
    """``model Qwen/Qwen3-4B`` or ``data set owner/name`` from a hub URL, else the URL itself."""
    parts = [p for p in urlsplit(url).path.split("/") if p]
    if parts[:1] == ["api"]:
        parts = parts[1:]
    kind = "model"
    if parts[:1] in (["models"], ["datasets"], ["spaces"]):
        kind = {"models": "model", "datasets": "data set", "spaces": "space"}[parts[0]]
        parts = parts[1:]
    if len(parts) >= 2 and (len(parts) == 2 or parts[2] in ("resolve", "revision", "tree", "paths-info")):
        return f"{kind} {parts[0]}/{parts[1]}"
    return url


def network_failure(exc: BaseException) -> str | None:
    """One line for a failed connection (what was being fetched, and how to work offline), else None."""
    types = _network_types()
    for cause in _chain(exc):
        if isinstance(cause, types):
            url = next((u for u in map(_request_url, _chain(exc)) if u), None)
            host = urlsplit(url).netloc if url else "the network"
            what = hub_target(url) if url else "a remote file"
            reason = str(cause).strip() or type(cause).__name__
            return f"cannot reach {host} to fetch {what} ({reason}); {OFFLINE_HINT}"
    return None


# failures of the file system, not of the program: one line even where the error names no file
_STORAGE_ERRNOS = frozenset(
    getattr(errno, name)
    for name in ("ENOSPC", "EDQUOT", "EFBIG", "EROFS", "EIO", "ESTALE")
    if hasattr(errno, name)
)


def file_failure(exc: BaseException) -> str | None:
    """One line for an OSError about a named file (missing, unreadable, unwritable, disk full), else None.

    A disk that is full (or read-only, or over quota) is named by its error even without a file name.
    """
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        other = f" -> {exc.filename2}" if exc.filename2 is not None else ""
        return f"{exc.filename}{other}: {exc.strerror}"
    for cause in _chain(exc):
        if isinstance(cause, OSError) and cause.errno in _STORAGE_ERRNOS:
            return f"{cause.strerror or cause} while writing; free space (or choose another place) and rerun"
    return None


def describe(exc: BaseException) -> str | None:
    """The one-line message for an environment failure, or None for a bug (then a traceback helps)."""
    return network_failure(exc) or file_failure(exc)
