"""Shallow answers for the supervised stage: stop early with a fixed per-step probability, sometimes pad.

After each step (and before the first) an example stops with probability ``stop_prob`` and boxes
the value reached so far, so ``P(at least j steps) = (1 - stop_prob) ** j``: the geometric decay of
the paper's Shallow Exploration Trap. With probability ``pad_prob`` an example that wrote at least
one step repeats its last step ``pad_repeats`` more times before boxing: the padding channel, a
way to write more tokens without going deeper, which a length-only reward can pay for and the
redundancy penalty is there to catch. Works for any task module of ``lie.tasks`` that has
``written_solution(problem, keep_steps, repeats)``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from types import ModuleType
from typing import Any


def sampled_steps(depth: int, rng: random.Random, stop_prob: float) -> int:
    """Steps written before stopping, cut at ``depth`` (a full solution): ``P(keep >= j) = (1 - p) ** j``."""
    if not 0.0 <= stop_prob <= 1.0:
        raise ValueError(f"stop_prob must be in [0, 1], got {stop_prob}")
    keep = 0
    while keep < depth and rng.random() >= stop_prob:
        keep += 1
    return keep


@dataclass(frozen=True)
class Example:
    text: str
    keep: int  # steps written (distinct)
    repeats: int  # extra copies of the last step


def shallow_example(
    task: ModuleType, problem: Any, rng: random.Random, stop_prob: float, pad_prob: float, pad_repeats: int
) -> Example:
    """One supervised example of ``problem``: a geometric number of steps, padded with ``pad_prob``."""
    if not 0.0 <= pad_prob <= 1.0:
        raise ValueError(f"pad_prob must be in [0, 1], got {pad_prob}")
    keep = sampled_steps(problem.depth, rng, stop_prob)
    repeats = pad_repeats if keep and rng.random() < pad_prob else 0
    return Example(task.written_solution(problem, keep, repeats), keep, repeats)
