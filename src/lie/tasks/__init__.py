"""Synthetic tasks written by the project (no fetched data): the smoke run's data and the CPU study.

- :mod:`lie.tasks.arithmetic`: multi-step arithmetic (the smoke run; an early answer is mostly wrong);
- :mod:`lie.tasks.chain`: the same, drawn so that an early answer is wrong by construction (the study);
- :mod:`lie.tasks.pointer`: pointer chasing (wrong by construction too, but a 2-layer 64-wide model
  did not learn its lookups in the study's supervised budget);
- :mod:`lie.tasks.shallow`: the supervised stage's shallow, sometimes padded, examples.

A task module has ``generate(count, seed, min_depth, max_depth)`` (problems with ``question()``,
``answer``, ``depth``, ``solution()``) and ``written_solution(problem, keep_steps, repeats)``.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from lie.core.errors import LieError

TASKS = ("arithmetic", "chain", "pointer")


def task_module(name: str) -> ModuleType:
    """The module of synthetic task ``name`` (one of :data:`TASKS`)."""
    if name not in TASKS:
        raise LieError(f"unknown synthetic task {name!r}; one of {', '.join(TASKS)}")
    return importlib.import_module(f"lie.tasks.{name}")
