"""The one grading executor of the project: worker processes, a hard limit per item, sync and async faces.

math-verify guards itself with SIGALRM, which works only in a process's main thread, cannot
interrupt a long call into C (a huge integer power, a regular expression) and does not bound the
sum of its guards (two parses and a comparison, 5 s each). So every item is graded in the main
thread of a worker process of a ``pebble.ProcessPool``, and an item that runs longer than
``timeout_s`` is stopped by killing *its* worker only (pebble restarts it); siblings in flight are
untouched. The limit counts the item's own running time (pebble starts the clock when a worker
acknowledges the task), not its wait in the queue nor the pool's start-up, and it must exceed
math-verify's own guards so that those fire first and a kill stays the last resort.

Every caller goes through here: the verl reward manager (``await executor.grade(item)``), the TRL
engine, ``lie reflen``, ``lie evaluate`` and ``lie grade`` (``executor.grade_many(items)`` or the
module-level :func:`grade_many`). Workers import this module, math-verify and ``lie.grading``
only: never verl or torch.

A pool whose workers cannot start (a script that does not guard its entry point with ``if __name__ ==
"__main__":`` or is read from standard input: the workers re-import it; a worker killed while it starts)
is an error of the whole run, never a wrong grade: every face raises a LieError that says so, and no
face waits on a broken pool (pebble leaves the items scheduled after the break without an outcome).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import math
import multiprocessing
import os
import signal
import time
from collections.abc import Sequence
from typing import Any

from lie.core.errors import LieError
from lie.grading import mathverify
from lie.grading.items import check_item, grade_item
from lie.grading.result import GradeResult

log = logging.getLogger(__name__)

GUARD_S = int(mathverify.PARSE_TIMEOUT_S)  # math-verify's own limit per parse and per comparison (whole s)
GUARDS_PER_ITEM = 3  # parse(response), parse(gold), verify
DEFAULT_TIMEOUT_S = 20.0  # above 3 x 5 s: math-verify's guards fire first
POLL_S = 1.0  # how often a wait looks at the pool's health
_WARM_UP = {"response": "so \\boxed{\\frac{1}{2}}", "gold": "0.5", "kind": "math"}


def default_workers() -> int:
    """The cores this process may use (Slurm and taskset limits included)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def check_limits(timeout_s: Any, workers: Any, guard_s: int = GUARD_S) -> tuple[float, int]:
    """``(timeout_s, workers)`` as numbers, or a LieError that says what a valid value is."""
    try:
        timeout = float(timeout_s)
    except (TypeError, ValueError):
        raise LieError(f"the grading time limit must be a number of seconds, got {timeout_s!r}") from None
    if not math.isfinite(timeout) or timeout <= 0:
        raise LieError(f"the grading time limit must be a finite number > 0 seconds, got {timeout_s!r}")
    if isinstance(guard_s, bool) or not isinstance(guard_s, int) or guard_s < 1:
        raise LieError(f"math-verify's guard is whole seconds >= 1 (signal.alarm), got {guard_s!r}")
    guards = GUARDS_PER_ITEM * guard_s
    if timeout <= guards:
        raise LieError(
            f"the grading time limit ({timeout:g} s) must exceed math-verify's own guards "
            f"({GUARDS_PER_ITEM} x {guard_s:g} s = {guards:g} s), so that they fire before a kill; "
            f"use e.g. {DEFAULT_TIMEOUT_S:g} (evaluation.grade_timeout_s, --timeout)"
        )
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 0:
        raise LieError(f"grading workers must be an integer >= 0 (0: one per core), got {workers!r}")
    return timeout, workers


def _init_worker(guard_s: int) -> None:
    """In each worker: Ctrl-C is the parent's, math-verify's guards set, its parsers built (lazily)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    mathverify.PARSE_TIMEOUT_S = guard_s
    mathverify.VERIFY_TIMEOUT_S = guard_s
    grade_item(_WARM_UP)


def _grade_one(item: dict[str, Any]) -> GradeResult:
    """One item in a worker's main thread (math-verify's SIGALRM guards work there)."""
    start = time.perf_counter()
    try:
        result = grade_item(item)
    except BaseException as exc:  # math-verify's TimeoutException is a BaseException
        result = GradeResult(False, None, "error", message=f"{type(exc).__name__}: {exc}")
    result.seconds = time.perf_counter() - start
    return result


def _context() -> Any:
    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["lie.grading.executor", "math_verify"])
        return ctx
    return multiprocessing.get_context("spawn")


class GradingExecutor:
    """A pool of grading workers; each item is limited to ``timeout_s`` seconds of its own running time.

    ``grade(item)`` is the async face (a coroutine), ``grade_many(items)`` the sync one; both run
    the same workers. Items are checked (``lie.grading.check_item``) before they are sent.
    """

    def __init__(self, timeout_s: float = DEFAULT_TIMEOUT_S, workers: int = 0, guard_s: int = GUARD_S):
        from pebble import ProcessPool

        self.timeout_s, workers = check_limits(timeout_s, workers, guard_s)
        self.workers = workers or default_workers()
        self._pool = ProcessPool(
            max_workers=self.workers, initializer=_init_worker, initargs=(guard_s,), context=_context()
        )

    def submit(self, item: dict[str, Any], where: str = "item") -> concurrent.futures.Future:
        """Schedule one item; the future's result is the raw worker outcome (see :meth:`result_of`)."""
        checked = check_item(item, where)
        try:
            return self._pool.schedule(_grade_one, args=(checked,), timeout=self.timeout_s)
        except RuntimeError as exc:  # pebble refuses work once the pool is broken
            raise self._broken(exc) from None

    def _broken(self, cause: BaseException) -> LieError:
        return LieError(
            f"the grading workers could not start or all died ({type(cause).__name__}: {cause}); a script "
            "that grades must guard its entry point with `if __name__ == '__main__':` and be a file (the "
            "workers re-import it), and the machine must have memory for the workers"
        )

    def _check_alive(self) -> None:
        """A LieError once the pool is broken: pebble may never settle the items it still holds."""
        if not self._pool.active:
            raise self._broken(RuntimeError("the pool stopped"))

    def _wait(self, future: concurrent.futures.Future) -> None:
        while not concurrent.futures.wait([future], timeout=POLL_S).done:
            self._check_alive()

    def result_of(self, future: concurrent.futures.Future) -> GradeResult:
        """A finished future as a GradeResult: a kill is ``timeout``, a dead worker ``error``; a broken
        pool is a LieError (the run cannot grade), never a wrong grade."""
        from pebble import ProcessExpired

        try:
            return future.result()
        except concurrent.futures.BrokenExecutor as exc:  # pebble: "All workers expired"
            raise self._broken(exc) from None
        except concurrent.futures.TimeoutError:
            why = f"killed after {self.timeout_s:g} s of grading (the hard limit)"
            return GradeResult(False, None, "timeout", self.timeout_s, why)
        except ProcessExpired as exc:
            why = f"the grading worker died (exit code {exc.exitcode}) on this item"
            return GradeResult(False, None, "error", message=why)
        except concurrent.futures.CancelledError:
            return GradeResult(False, None, "error", message="grading was cancelled")
        except Exception as exc:  # a worker-side failure pebble passes back (pickling, a crash)
            return GradeResult(False, None, "error", message=f"{type(exc).__name__}: {exc}")

    async def grade(self, item: dict[str, Any]) -> GradeResult:
        """The async face: grade one item without blocking the event loop."""
        future = self.submit(item)
        waiting = asyncio.wrap_future(future)
        # the outcome is read from `future` below; the wrapper's is marked read whenever it comes, so that
        # a wrapper left behind (a LieError or a cancelled task) is not logged as "never retrieved"
        waiting.add_done_callback(lambda done: done.cancelled() or done.exception())
        try:
            while not (await asyncio.wait([waiting], timeout=POLL_S))[0]:
                self._check_alive()
        except asyncio.CancelledError:
            future.cancel()  # pebble stops the worker if the item was running
            raise
        except LieError:
            future.cancel()
            raise
        except BaseException:  # the outcome is read below
            pass
        return self.result_of(future)

    def grade_many(self, items: Sequence[dict[str, Any]], progress: bool = True) -> list[GradeResult]:
        """The sync face: every item graded, results in the order of ``items``."""
        from tqdm import tqdm

        futures = [self.submit(item, f"item {i}") for i, item in enumerate(items)]
        results = []
        with tqdm(total=len(futures), desc="grading", unit="item", disable=not progress) as bar:
            for future in futures:
                self._wait(future)
                results.append(self.result_of(future))
                bar.update(1)
        killed = sum(r.status == "timeout" and (r.message or "").startswith("killed") for r in results)
        if killed:
            log.info(
                "%d of %d items hit the %g s limit (killed, counted wrong)",
                killed,
                len(items),
                self.timeout_s,
            )
        return results

    def close(self) -> None:
        """Stop the workers (an item still running is killed)."""
        self._pool.stop()
        self._pool.join()

    def __enter__(self) -> GradingExecutor:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def grade_many(
    items: Sequence[dict[str, Any]],
    timeout_s: float = DEFAULT_TIMEOUT_S,
    workers: int = 0,
    progress: bool = True,
    guard_s: int = GUARD_S,
) -> list[GradeResult]:
    """Grade ``items`` in ``workers`` processes (0: one per core), each under ``timeout_s`` seconds."""
    timeout_s, workers = check_limits(timeout_s, workers, guard_s)
    checked = [check_item(item, f"item {i}") for i, item in enumerate(items)]
    if not checked:
        return []
    with GradingExecutor(timeout_s, min(workers or default_workers(), len(checked)), guard_s) as executor:
        return executor.grade_many(checked, progress=progress)
