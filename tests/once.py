"""Build a test input once per pytest run, however many pytest-xdist workers ask for it.

``make test`` runs two workers (tests/conftest.py); a fixture of either may need the same costly input
(the smoke DAG run, a tiny model). The first worker to ask builds it under a file lock in the run's
shared temporary folder; the other waits on the lock and reuses the folder. A build that fails is
recorded, so the other worker fails at once with the same message instead of building it again.
"""

from __future__ import annotations

import os
import shutil
import traceback
from collections.abc import Callable
from pathlib import Path

import pytest
from filelock import FileLock

COMPLETE, FAILED = ".complete", ".failed"


def run_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The temporary folder every worker of this pytest run shares (the base folder without xdist)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def built_once(tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]) -> Path:
    """``run_folder/once/name``, filled by ``build(folder)`` the first time any worker asks."""
    folder = run_folder(tmp_path_factory) / "once" / name
    folder.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(f"{folder}.lock"):
        if (folder / FAILED).exists():
            pytest.fail(f"building {name} failed in another worker:\n{(folder / FAILED).read_text()}")
        if not (folder / COMPLETE).exists():
            shutil.rmtree(folder, ignore_errors=True)  # a build interrupted in this run: start again
            folder.mkdir()
            try:
                build(folder)
            except BaseException:
                (folder / FAILED).write_text(traceback.format_exc()[-6000:])
                raise
            (folder / COMPLETE).touch()
    return folder
