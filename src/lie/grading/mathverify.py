"""Math answers graded exactly as the authors' reward and eval script do, with statuses on top.

Correct means ``verify(parse("$" + gold + "$"), parse(response))`` is True: math-verify's default
extraction over the whole decoded response (no ``<think>`` split), gold first (``verify`` is not
symmetric). What we add is a status that says why an answer was not scored:

- ``error``: the gold answer parses to nothing, so no response could match it (open-r1 #293);
- ``no_answer``: nothing in the response parses;
- ``timeout``: one of math-verify's own timeouts fired and the answer was not found correct.

math-verify's timeouts use SIGALRM, which works only in a process's main thread. Off the main
thread (verl may call the reward from a worker thread) we call it with its timeouts off rather
than crash; the caller must then bound the time itself (``lie.grading.grade_many`` does, with
worker processes it can kill).
"""

from __future__ import annotations

import logging
import threading
import time

from lie.grading.result import GradeResult

log = logging.getLogger(__name__)

# math-verify 0.9's defaults, which the authors ran with: each parse and each comparison <= 5 s.
PARSE_TIMEOUT_S = 5
VERIFY_TIMEOUT_S = 5
_MATH_VERIFY_LOGGERS = ("math_verify.parser", "math_verify.grader")
_seen = threading.local()
_installed = False


class _TimeoutCounter(logging.Filter):
    """Count math-verify's "Timeout during ..." warnings (the only sign of its timeouts) and drop them.

    The parsing warning quotes the whole response (tens of thousands of characters); we report the
    timeout as a status instead.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if str(record.msg).startswith("Timeout during"):
            _seen.timeouts = getattr(_seen, "timeouts", 0) + 1
            return False
        return True


def _install_counter() -> None:
    global _installed
    if not _installed:
        for name in _MATH_VERIFY_LOGGERS:
            logging.getLogger(name).addFilter(_TimeoutCounter())
        _installed = True


def _last_string(parsed: list) -> str | None:
    """The extracted text of a parse (math-verify appends the matched string); never ``str(sympy)``,
    which can itself take forever on a huge expression."""
    for value in reversed(parsed):
        if isinstance(value, str):
            return value
    return None


def grade_math(response: str, gold: str) -> GradeResult:
    """Grade ``response`` against ``gold`` in this process (see the module docstring)."""
    from math_verify import parse, verify
    from math_verify.errors import TimeoutException

    _install_counter()
    start = time.perf_counter()
    main = threading.current_thread() is threading.main_thread()
    # math-verify's own limits in the main thread; off it, no signals at all.
    parse_kw = {"parsing_timeout": PARSE_TIMEOUT_S if main else None}
    verify_kw = {"timeout_seconds": VERIFY_TIMEOUT_S if main else None}
    _seen.timeouts = 0
    try:
        pred_parsed = parse(response, **parse_kw)
        response_timeouts = _seen.timeouts
        gold_parsed = parse("$" + gold + "$", **parse_kw)
        gold_timeouts = _seen.timeouts - response_timeouts
        correct = bool(gold_parsed) and verify(gold_parsed, pred_parsed, **verify_kw) is True
    except TimeoutException:  # a BaseException; an alarm that fired between math-verify's guards
        return GradeResult(False, None, "timeout", time.perf_counter() - start, "math-verify timed out")
    except Exception as exc:  # math-verify swallows its own errors; anything else is ours to report
        return GradeResult(False, None, "error", time.perf_counter() - start, f"{type(exc).__name__}: {exc}")
    seconds = time.perf_counter() - start
    pred = _last_string(pred_parsed)
    if not gold_parsed:
        why = "timed out" if gold_timeouts else "gives nothing"
        return GradeResult(False, pred, "error", seconds, f"gold answer {gold!r}: math-verify parse {why}")
    if correct:
        return GradeResult(True, pred, "ok", seconds)
    if _seen.timeouts:
        return GradeResult(False, pred, "timeout", seconds, "math-verify timed out")
    if not pred_parsed:
        return GradeResult(False, None, "no_answer", seconds)
    return GradeResult(False, pred, "ok", seconds)
