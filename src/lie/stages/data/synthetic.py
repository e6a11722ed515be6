"""Rows the project writes itself (the smoke run, the study): a synthetic task of ``lie.tasks``.

Math rows carry the columns of the ``problem-answer`` format (and ``depth`` where the entry's
``filter`` names it), multiple-choice rows those of the
``mmlu-pro`` format, so that they go through the same adapters as the real data sets.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from lie.config.datasets import DatasetSpec
from lie.core.errors import LieError
from lie.tasks import arithmetic, task_module


def synthetic_table(spec: DatasetSpec) -> tuple[pa.Table, dict[str, Any]]:
    s = spec.synthetic or {}
    try:
        problems = task_module(s["task"]).generate(s["count"], s["seed"], s["min_depth"], s["max_depth"])
    except ValueError as exc:
        raise LieError(f"{spec.where}.synthetic: {exc}") from None
    origin = {"type": "synthetic", **s}
    if spec.kind == "math":
        table = pa.table(
            {
                "problem": [p.question() for p in problems],
                "answer": [str(p.answer) for p in problems],
                "id": [f"{spec.name}-{i}-depth{p.depth}" for i, p in enumerate(problems)],
            }
        )
        if "depth" in (spec.filter or {}):  # a filter on depth (the study's deep test set) reads it
            table = table.append_column("depth", pa.array([p.depth for p in problems], pa.int64()))
        return table, origin
    if s["task"] != "arithmetic":
        raise LieError(f"{spec.where}: multiple-choice rows are written for the arithmetic task only")
    opts = [arithmetic.options(p, seed=s["seed"] * 100_003 + i) for i, p in enumerate(problems)]
    table = pa.table(
        {
            "question": [p.question() for p in problems],
            "options": [o for o, _ in opts],
            "answer": [letter for _, letter in opts],
            "question_id": list(range(len(problems))),
        }
    )
    return table, origin
