"""Arithmetic chains whose answer is none of the values before it: an early answer is wrong by construction.

The problems of :mod:`lie.tasks.arithmetic` ("Start with 7. Add 5, then multiply by 2, then
subtract 3. What number do you get?"; values 0..99, operations +/- 1-9, *2, *3), drawn again until
the answer differs from the start and from every running value before the last: a response that
stops after ``j < k`` steps and boxes the value it reached is wrong, always (in the plain task it
is right when later operations cancel, a few percent of the time). The operations do not commute,
so a 2-layer model cannot fold several of them into one forward pass: every step has to be written.
Same text, solutions and grading as :mod:`lie.tasks.arithmetic`.

:func:`trace` reads a response back against its problem (steps written, depth reached, repeats):
the depth columns of the study's evaluation outputs.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from lie.tasks.arithmetic import Problem, boxed_answer, check, make_problem, written_solution

__all__ = ["Problem", "boxed_answer", "check", "generate", "parse_question", "trace", "written_solution"]

_STEP = re.compile(r"(-?\d+) ([+*-]) (\d+) = (-?\d+)")
_QUESTION = re.compile(r"Start with (\d+)\. (.*?)\. What number do you get\?")
_OPS = {"add": "+", "subtract": "-", "multiply by": "*"}
_OP_TEXT = re.compile(r"(add|subtract|multiply by) (\d+)")
TRIES = 1000


def distinct(problem: Problem) -> bool:
    """The answer differs from the start and from every running value before the last."""
    return problem.answer not in [problem.start, *problem.values()[:-1]]


def make_distinct_problem(rng: random.Random, depth: int) -> Problem:
    """A problem of ``depth`` operations (:func:`lie.tasks.arithmetic.make_problem`) that is :func:`distinct`."""
    for _ in range(TRIES):
        problem = make_problem(rng, depth)
        if distinct(problem):
            return problem
    raise ValueError(f"no problem of depth {depth} with a distinct answer in {TRIES} draws")


def generate(count: int, seed: int, min_depth: int, max_depth: int) -> list[Problem]:
    """``count`` distinct-answer problems, depths uniform in [min_depth, max_depth]; deterministic for a seed."""
    if not 1 <= min_depth <= max_depth:
        raise ValueError(f"need 1 <= min_depth <= max_depth, got {min_depth}, {max_depth}")
    rng = random.Random(seed)
    return [make_distinct_problem(rng, rng.randint(min_depth, max_depth)) for _ in range(count)]


def parse_question(text: str) -> Problem:
    """The problem a question (or a prompt holding one) states; ValueError when there is none."""
    found = _QUESTION.search(text)
    if not found:
        raise ValueError("no arithmetic-chain question in the text")
    ops = []
    for part in found.group(2).split(", then "):
        op = _OP_TEXT.fullmatch(part.strip().lower())
        if not op:
            raise ValueError(f"bad operation {part!r} in the question")
        ops.append((_OPS[op.group(1)], int(op.group(2))))
    return Problem(int(found.group(1)), tuple(ops))


def apply(value: int, op: str, operand: int) -> int:
    return value + operand if op == "+" else value - operand if op == "-" else value * operand


@dataclass(frozen=True)
class Trace:
    """A response read step by step against its problem."""

    depth_needed: int
    depth_written: int  # steps written, a repeat of the step before not counted
    depth_reached: int  # steps right from the start, up to the first wrong one
    steps_right: int  # written steps that apply the next operation to the value before, correctly
    repeats: int  # steps that repeat the step before (padding)
    boxed: int | None  # the last boxed integer


def trace(problem: Problem, response: str) -> Trace:
    """Steps ``a op v = b`` of ``response`` checked against ``problem``'s operations, in order."""
    written = right = repeats = reached = 0
    value, previous, on_path = problem.start, None, True
    for step in _STEP.finditer(response):
        a, op, operand, b = int(step.group(1)), step.group(2), int(step.group(3)), int(step.group(4))
        if (a, op, operand, b) == previous:
            repeats += 1
            continue
        expected = problem.ops[written] if written < problem.depth else None
        correct = a == value and (op, operand) == expected and apply(a, op, operand) == b
        written += 1
        right += correct
        on_path = on_path and correct
        reached += on_path
        value, previous = b, (a, op, operand, b)
    return Trace(problem.depth, written, reached, right, repeats, boxed_answer(response))
