"""Multi-step arithmetic: a start value and ``k`` operations; the answer needs ``k`` steps.

"Start with 7. Add 5, then multiply by 2, then subtract 3. What number do you get?" The full
solution writes every intermediate result ("7 + 5 = 12. 12 * 2 = 24. 24 - 3 = 21.") and ends with
``\\boxed{21}``; difficulty is ``k``. Values stay in 0..99 so that solutions are short. Grading is
exact: the last ``\\boxed{}`` must hold the integer answer. Deterministic for a seed.

Shallow answers (a supervised stage, ``lie.tasks.shallow``): :func:`truncated_solution` writes the
first few steps and then jumps to a guess, the running value reached so far (:func:`guess`): the
rule a policy that stops early can follow, wrong unless the skipped operations happen to cancel
out (so only *mostly* wrong: the CPU study uses ``lie.tasks.pointer``, where it always is).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

LETTERS = "ABCDEFGHIJ"
_WORDS = {"+": "add {v}", "-": "subtract {v}", "*": "multiply by {v}"}
_BOXED = re.compile(r"\\boxed\{\s*(-?\d+)\s*\}")
MAX_VALUE = 99
PAD_WORD = "Check:"  # opens a repeated step (padding)


@dataclass(frozen=True)
class Problem:
    start: int
    ops: tuple[tuple[str, int], ...]

    @property
    def depth(self) -> int:
        return len(self.ops)

    def values(self) -> list[int]:
        """The running value after each operation."""
        out, value = [], self.start
        for op, v in self.ops:
            value = value + v if op == "+" else value - v if op == "-" else value * v
            out.append(value)
        return out

    @property
    def answer(self) -> int:
        return self.values()[-1] if self.ops else self.start

    def question(self) -> str:
        words = ", then ".join(_WORDS[op].format(v=v) for op, v in self.ops)
        return f"Start with {self.start}. {words[0].upper() + words[1:]}. What number do you get?"

    def steps(self) -> list[str]:
        out, prev = [], self.start
        for (op, v), value in zip(self.ops, self.values()):
            out.append(f"{prev} {op} {v} = {value}")
            prev = value
        return out

    def solution(self) -> str:
        """The full step-by-step solution."""
        return truncated_solution(self, self.depth)


def make_problem(rng: random.Random, depth: int) -> Problem:
    """A problem of ``depth`` operations whose running values stay in 0..MAX_VALUE."""
    value = rng.randint(1, 20)
    start, ops = value, []
    for _ in range(depth):
        choices = [("+", rng.randint(1, 9)), ("-", rng.randint(1, 9)), ("*", rng.randint(2, 3))]
        rng.shuffle(choices)
        for op, v in choices:
            new = value + v if op == "+" else value - v if op == "-" else value * v
            if 0 <= new <= MAX_VALUE:
                ops.append((op, v))
                value = new
                break
        else:  # pragma: no cover - subtracting 1..9 from a value > 9 or adding to a small one always fits
            raise AssertionError("no operation keeps the value in range")
    return Problem(start, tuple(ops))


def generate(count: int, seed: int, min_depth: int, max_depth: int) -> list[Problem]:
    """``count`` problems, depths drawn uniformly from [min_depth, max_depth]."""
    if not 1 <= min_depth <= max_depth:
        raise ValueError(f"need 1 <= min_depth <= max_depth, got {min_depth}, {max_depth}")
    rng = random.Random(seed)
    return [make_problem(rng, rng.randint(min_depth, max_depth)) for _ in range(count)]


def guess(problem: Problem, keep_steps: int) -> int:
    """The shallow guess after ``keep_steps`` steps: the running value so far (the start for 0)."""
    if not 0 <= keep_steps <= problem.depth:
        raise ValueError(f"keep_steps must be in 0..{problem.depth}, got {keep_steps}")
    return problem.values()[keep_steps - 1] if keep_steps else problem.start


def truncated_solution(problem: Problem, keep_steps: int) -> str:
    """The first ``keep_steps`` steps, then the boxed guess (the full solution when all are kept)."""
    return written_solution(problem, keep_steps)


def written_solution(problem: Problem, keep_steps: int, repeats: int = 0) -> str:
    """:func:`truncated_solution` with the last written step checked ``repeats`` more times (padding).

    A repeat reads "Check: 12 * 2 = 24.": the same step again, so that the n-gram state repeats, with
    a first word of its own, so that a tiny model's next token after a step tells repeating from
    going on (a bare repeat starts like the next step and blurred its copying of the value).
    """
    steps = [f"{s}. " for s in problem.steps()[:keep_steps]]
    if steps:
        steps += [f"{PAD_WORD} {steps[-1]}"] * repeats
    return "".join(steps) + f"The answer is \\boxed{{{guess(problem, keep_steps)}}}."


def boxed_answer(response: str) -> int | None:
    """The integer in the last ``\\boxed{}`` of a response, or None."""
    found = _BOXED.findall(response)
    return int(found[-1]) if found else None


def check(response: str, answer: int) -> bool:
    """Exact grading: the last boxed integer equals the answer."""
    return boxed_answer(response) == answer


def options(problem: Problem, seed: int, count: int = 4) -> tuple[list[str], str]:
    """Multiple-choice options (the answer and near misses, shuffled by ``seed``) and the right letter."""
    rng = random.Random(seed)
    answer = problem.answer
    wrong: list[int] = []
    for delta in rng.sample([-3, -2, -1, 1, 2, 3, 5, 10], k=8):
        if len(wrong) == count - 1:
            break
        if answer + delta >= 0 and answer + delta not in wrong:
            wrong.append(answer + delta)
    values = [answer, *wrong]
    rng.shuffle(values)
    return [str(v) for v in values], LETTERS[values.index(answer)]
