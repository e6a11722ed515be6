"""Grading a file of JSON-lines responses (``lie grade``), outside training and evaluation.

In: ``response``, ``gold``, ``kind`` (``math`` | ``choice``) and, for choice items, ``choices``,
optionally ``options`` and ``choice_grading``. Out: the same objects with ``correct``, ``pred``,
``status`` and ``message``. Math answers go through math-verify in worker processes, each under a
hard time limit (``lie.grading.executor``).
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any

from lie.config import grading_limits, load_config
from lie.core.errors import LieError
from lie.formats.jsonl import atomic_output, dumps, read_jsonl
from lie.grading import check_item, grade_many
from lie.grading.executor import DEFAULT_TIMEOUT_S
from lie.grading.items import CHOICE_GRADINGS, DEFAULT_CHOICE_GRADING

__all__ = [
    "CHOICE_GRADINGS",
    "DEFAULT_CHOICE_GRADING",
    "DEFAULT_TIMEOUT_S",
    "grade_file",
    "grading_settings",
    "with_choice_grading",
]

log = logging.getLogger(__name__)


def grading_settings(
    config_path: str | None, timeout: float | None, workers: int | None
) -> tuple[float, int]:
    """(time limit, workers): the flags, else ``evaluation:`` of the config, else the executor's defaults."""
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


def grade_file(
    inp: str,
    out: str,
    config_path: str | None = None,
    timeout: float | None = None,
    workers: int | None = None,
    choice_grading: str = DEFAULT_CHOICE_GRADING,
    progress: bool = True,
) -> Counter:
    """Grade every line of ``inp`` (``-``: stdin) into ``out`` (``-``: stdout), all or nothing;
    returns the count of each status (and ``correct``)."""
    timeout, workers = grading_settings(config_path, timeout, workers)
    name = "<stdin>" if inp == "-" else inp
    rows, items = [], []
    for lineno, obj in read_jsonl(inp):
        items.append(check_item(with_choice_grading(obj, choice_grading), f"{name} line {lineno}"))
        rows.append(obj)
    results = grade_many(items, timeout_s=timeout, workers=workers, progress=progress)
    with atomic_output(out) as stream:
        for obj, result in zip(rows, results, strict=True):
            obj.update(correct=result.correct, pred=result.pred, status=result.status, message=result.message)
            stream.write(dumps(obj) + "\n")
    statuses = Counter(r.status for r in results)
    right = sum(r.correct for r in results)
    log.info(
        "graded %d items (multiple choice by default: %s): %d correct (%.1f%%); %s",
        len(results),
        choice_grading,
        right,
        100.0 * right / max(1, len(results)),
        ", ".join(f"{k} {statuses[k]}" for k in ("ok", "no_answer", "timeout", "error")),
    )
    statuses["correct"] = right
    return statuses
