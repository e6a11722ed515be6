"""Synthetic tasks written by the project (no fetched data): the smoke run's data and the CPU study.

- :mod:`lie.tasks.arithmetic`: multi-step arithmetic (the smoke run; a guess is mostly wrong);
- :mod:`lie.tasks.pointer`: pointer chasing (the study; an early answer is wrong by construction);
- :mod:`lie.tasks.shallow`: the supervised stage's shallow, sometimes padded, examples.

A task module has ``generate(count, seed, min_depth, max_depth)`` (problems with ``question()``,
``answer``, ``depth``, ``solution()``) and ``written_solution(problem, keep_steps, repeats)``.
"""

from __future__ import annotations

import importlib
from types import ModuleType

TASKS = ("arithmetic", "pointer")


def task_module(name: str) -> ModuleType:
    """The module of synthetic task ``name`` (one of :data:`TASKS`)."""
    from lie.errors import LieError

    if name not in TASKS:
        raise LieError(f"unknown synthetic task {name!r}; one of {', '.join(TASKS)}")
    return importlib.import_module(f"lie.tasks.{name}")
