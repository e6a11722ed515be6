"""Can envs/cpu.lock (``make venv``: .venv, for ``make smoke`` and ``make test``) be installed with this Python?

Exits 0 in silence where it can; else prints one line saying which Python to use and exits 2, before
anything is built. Standard library only: it runs under the Python that will build the environment.

The limits are the lock's (checked 2026-12-07 with ``pip install --dry-run --no-deps --only-binary=:all:
--python-version X.Y`` over the lock for Linux x86-64): every compiled pin has a CPython 3.12 and a 3.13
wheel, but verl 0.9.1 declares ``Requires-Python <3.13,>=3.10``, so 3.13 is out.
"""

from __future__ import annotations

import sys

# CPython versions every pin of envs/cpu.lock installs on (a wheel, or a pure-Python source, that allows it)
SUPPORTED = ((3, 11), (3, 12))
WHY = {(3, 13): "verl 0.9.1 requires Python < 3.13"}


def why_not(version: tuple[int, int]) -> str | None:
    """Why envs/cpu.lock cannot be installed with CPython ``version``, or None where it can."""
    if tuple(version) in SUPPORTED:
        return None
    found = ".".join(map(str, version))
    names = ", ".join(".".join(map(str, v)) for v in SUPPORTED)
    why = f" ({WHY[tuple(version)]})" if tuple(version) in WHY else ""
    return (
        f"make venv: envs/cpu.lock is installable with Python {names}, found {found}{why}: install one of them "
        "and pass it, e.g. make venv PYTHON=python3.11"
    )


def main() -> int:
    reason = why_not((sys.version_info[0], sys.version_info[1]))
    if reason:
        print(reason, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
