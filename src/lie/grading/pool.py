"""Grading many items in worker processes, each item under a hard time limit.

math-verify guards itself with SIGALRM, which cannot interrupt a long call into C (a huge integer
power, a regular expression) and does not bound the sum of its several 5 s guards. So every worker
is a process of its own with its own pipe: it grades one item at a time in its main thread (where
math-verify's timeouts work), and when an item outlives ``timeout_s`` the parent kills that worker
(SIGKILL), records the item as ``timeout``, starts a fresh worker and carries on. A worker that
dies for another reason (out of memory, a crash) costs only its item, reported as ``error``.

Workers come from a fork server that has imported math-verify once, so starting (and restarting)
one takes milliseconds and none inherits the parent's threads (torch, tokenizers, tqdm).
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import time
from collections import deque
from collections.abc import Sequence
from multiprocessing.connection import Connection, wait
from typing import Any

from lie.errors import LieError
from lie.grading.items import check_item, grade_item
from lie.grading.result import GradeResult

log = logging.getLogger(__name__)

STARTUP_TIMEOUT_S = 120.0  # a worker that is not ready by then means a broken environment
_WARM_UP = {"response": "so \\boxed{\\frac{1}{2}}", "gold": "0.5", "kind": "math"}


def default_workers() -> int:
    """The cores this process may use (Slurm and taskset limits included)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def _context() -> Any:
    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["lie.grading.items", "math_verify"])
        return ctx
    return multiprocessing.get_context("spawn")


def _serve(conn: Connection) -> None:
    """A worker: warm up (math-verify builds its parsers lazily), say ready, then grade until told to stop."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    grade_item(_WARM_UP)
    conn.send(("ready", None))
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        index, item = message
        start = time.perf_counter()
        try:
            result = grade_item(item)
        except BaseException as exc:  # math-verify's TimeoutException is a BaseException
            result = GradeResult(False, None, "error", message=f"{type(exc).__name__}: {exc}")
        result.seconds = time.perf_counter() - start
        conn.send((index, result))


class _Worker:
    def __init__(self, ctx: Any) -> None:
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_serve, args=(child,), daemon=True, name="lie-grade")
        self.process.start()
        child.close()
        self.started = time.monotonic()
        self.ready = False
        self.index: int | None = None
        self.deadline = float("inf")
        self.sent = 0.0

    def send(self, index: int, item: dict[str, Any], timeout_s: float) -> None:
        self.index, self.sent = index, time.monotonic()
        self.deadline = self.sent + timeout_s
        self.conn.send((index, item))

    def stop(self, kill: bool = False) -> None:
        if not kill:
            try:
                self.conn.send(None)
            except (OSError, ValueError):
                kill = True
        if kill and self.process.is_alive():
            self.process.kill()
        self.process.join(timeout=None if kill else 2.0)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self.conn.close()


def grade_many(
    items: Sequence[dict[str, Any]],
    timeout_s: float = 10,
    workers: int = 0,
    progress: bool = True,
) -> list[GradeResult]:
    """Grade ``items`` in ``workers`` processes (0: one per core), each under ``timeout_s`` seconds.

    Results come back in the order of ``items``. An item that runs out of time is ``timeout``
    (wrong); the batch always completes.
    """
    from tqdm import tqdm

    if timeout_s <= 0:
        raise LieError(f"the grading time limit must be > 0 seconds, got {timeout_s}")
    if workers < 0:
        raise LieError(f"grading workers must be >= 0 (0: one per core), got {workers}")
    checked = [check_item(item, f"item {i}") for i, item in enumerate(items)]
    if not checked:
        return []
    count = min(workers or default_workers(), len(checked))
    ctx = _context()
    pending = deque(range(len(checked)))
    results: list[GradeResult | None] = [None] * len(checked)
    pool: list[_Worker] = []
    bar = tqdm(total=len(checked), desc="grading", unit="item", disable=not progress)
    killed = 0

    def finish(worker: _Worker, result: GradeResult) -> None:
        assert worker.index is not None, "a result from an idle worker"
        results[worker.index] = result
        worker.index, worker.deadline = None, float("inf")
        bar.update(1)

    try:
        pool = [_Worker(ctx) for _ in range(count)]
        done = 0
        while done < len(checked):
            for worker in pool:
                if worker.ready and worker.index is None and pending:
                    i = pending.popleft()
                    worker.send(i, checked[i], timeout_s)
            now = time.monotonic()
            deadline = min((w.deadline for w in pool), default=float("inf"))
            wait_s = max(0.0, deadline - now) if deadline != float("inf") else 1.0
            ready = wait([w.conn for w in pool], timeout=min(wait_s, 1.0))
            for k, worker in enumerate(pool):
                if worker.conn in ready:
                    try:
                        tag, payload = worker.conn.recv()
                    except (EOFError, OSError):  # died: out of memory, a crash in C
                        worker.stop(kill=True)
                        code = worker.process.exitcode
                        if worker.index is not None:
                            why = f"the grading worker died (exit code {code}) on this item"
                            finish(
                                worker, GradeResult(False, None, "error", time.monotonic() - worker.sent, why)
                            )
                            done += 1
                        elif not worker.ready:
                            raise LieError(
                                f"a grading worker failed to start (exit code {code}); a script that calls "
                                "grade_many needs the `if __name__ == '__main__':` guard (multiprocessing)"
                            ) from None
                        pool[k] = _Worker(ctx)
                        continue
                    if tag == "ready":
                        worker.ready = True
                    else:
                        finish(worker, payload)
                        done += 1
            now = time.monotonic()
            for k, worker in enumerate(pool):
                if worker.index is not None and now >= worker.deadline:
                    elapsed = now - worker.sent
                    log.warning(
                        "item %d ran past the %.1f s limit: killing its worker", worker.index, timeout_s
                    )
                    worker.stop(kill=True)
                    why = f"killed after {elapsed:.1f} s (limit {timeout_s} s)"
                    finish(worker, GradeResult(False, None, "timeout", elapsed, why))
                    done += 1
                    killed += 1
                    pool[k] = _Worker(ctx)
                elif not worker.ready and now - worker.started > STARTUP_TIMEOUT_S:
                    raise LieError(f"a grading worker did not start within {STARTUP_TIMEOUT_S:.0f} s")
    finally:
        bar.close()
        for worker in pool:
            worker.stop(kill=worker.index is not None)
    if killed:
        log.info(
            "%d of %d items hit the %.1f s limit (killed and counted wrong)", killed, len(checked), timeout_s
        )
    return [r for r in results if r is not None]
