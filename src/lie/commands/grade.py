"""``lie grade --in FILE --out FILE``: grade JSON-lines responses (``-`` = stdin/stdout).

In: ``response`` (str), ``gold`` (str), ``kind`` (``math`` | ``choice``) and, for choice items,
``choices`` (their letters, e.g. ``["A", "B", "C", "D"]``), optionally ``options`` (the option
texts, aligned with ``choices``) and ``choice_grading`` (``robust`` | ``authors``; default
``--choice-grading``, itself ``robust``). Out: the same objects with ``correct``, ``pred``,
``status`` (``ok`` | ``no_answer`` | ``timeout`` | ``error``) and ``message``.
Math answers go through math-verify in worker processes, each under a hard time limit
(``--timeout``, default ``evaluation.grade_timeout_s`` of ``--config`` or 20 s).
Example: ``lie grade --in responses.jsonl --out graded.jsonl --workers 8``.
"""

from __future__ import annotations

import argparse
import logging
from collections import Counter
from typing import Any

from lie.core.errors import LieError
from lie.grading.executor import DEFAULT_TIMEOUT_S
from lie.grading.items import CHOICE_GRADINGS

log = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--in", dest="inp", required=True, help="JSON-lines input file, or - for stdin")
    parser.add_argument("--out", required=True, help="JSON-lines output file, or - for stdout")
    parser.add_argument("--config", help="config.yaml, for evaluation.grade_timeout_s and grade_workers")
    parser.add_argument("--timeout", type=float, default=None, help="hard limit per item, seconds")
    parser.add_argument("--workers", type=int, default=None, help="worker processes (0: one per core)")
    parser.add_argument(
        "--choice-grading",
        choices=CHOICE_GRADINGS,
        default="robust",
        help="multiple-choice reader for items without their own choice_grading: robust (default) or "
        "authors (math-verify, then the authors' A-E patterns)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def grading_settings(
    config_path: str | None, timeout: float | None, workers: int | None
) -> tuple[float, int]:
    """(time limit, workers): the flags, else ``evaluation:`` of the config, else the executor's defaults."""
    from lie.config import grading_limits, load_config

    limit, default_workers = (
        grading_limits(load_config(config_path)) if config_path else (DEFAULT_TIMEOUT_S, 0)
    )
    timeout = float(timeout if timeout is not None else limit)
    workers = int(workers if workers is not None else default_workers)
    if timeout <= 0 or workers < 0:
        raise LieError(f"the time limit must be > 0 and workers >= 0, got {timeout} and {workers}")
    return timeout, workers


def with_choice_grading(obj: Any, mode: str) -> Any:
    """A choice item without its own ``choice_grading`` gets ``mode``; the item's own field wins."""
    if isinstance(obj, dict) and obj.get("kind") == "choice" and obj.get("choice_grading") is None:
        return {**obj, "choice_grading": mode}
    return obj


def run(args: argparse.Namespace) -> int:
    from lie.formats.jsonl import atomic_output, dumps, read_jsonl
    from lie.grading import check_item, grade_many

    timeout, workers = grading_settings(args.config, args.timeout, args.workers)
    name = "<stdin>" if args.inp == "-" else args.inp
    rows, items = [], []
    for lineno, obj in read_jsonl(args.inp):
        items.append(check_item(with_choice_grading(obj, args.choice_grading), f"{name} line {lineno}"))
        rows.append(obj)
    results = grade_many(items, timeout_s=timeout, workers=workers, progress=not args.no_progress)
    with atomic_output(args.out) as out:
        for obj, result in zip(rows, results, strict=True):
            obj.update(correct=result.correct, pred=result.pred, status=result.status, message=result.message)
            out.write(dumps(obj) + "\n")
    statuses = Counter(r.status for r in results)
    right = sum(r.correct for r in results)
    log.info(
        "graded %d items (multiple choice by default: %s): %d correct (%.1f%%); %s",
        len(results),
        args.choice_grading,
        right,
        100.0 * right / max(1, len(results)),
        ", ".join(f"{k} {statuses[k]}" for k in ("ok", "no_answer", "timeout", "error")),
    )
    return 0
