"""Run by ``lie_coverage.pth`` (``make coverage``) at the start of every Python process of an
environment where COVERAGE_PROCESS_START is set: starts coverage.py (where its own .pth has not), and in Ray's worker processes
and in processes started by multiprocessing's spawn (vLLM's workers, torch's ``mp.spawn`` ranks) also
saves every few seconds: Ray ends its workers from C++ and vLLM its workers by signal (no atexit),
so their data would be lost."""

from __future__ import annotations

import sys
import threading
import time

import coverage

SAVE_EVERY_S = 2.0


def _save_forever(cov: coverage.Coverage) -> None:
    while True:
        time.sleep(SAVE_EVERY_S)
        try:
            cov.save()
        except Exception:  # a save racing the process's end: the next one (or atexit) has the data
            pass


# coverage.py's own a1_coverage.pth (7.7+) may have started it already: then process_startup gives None
cov = coverage.process_startup() or coverage.Coverage.current()
argv = " ".join(getattr(sys, "orig_argv", sys.argv))
ended_from_outside = "ray/_private/workers" in argv or "multiprocessing.spawn" in argv
if (
    cov is not None
    and ended_from_outside
    and not any(t.name == "coverage-saver" for t in threading.enumerate())
):
    threading.Thread(target=_save_forever, args=(cov,), name="coverage-saver", daemon=True).start()
