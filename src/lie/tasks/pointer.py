"""Pointer chasing: a shuffled table of pointers in the prompt; the answer is where ``k`` hops lead.

"Pointers: 31 -> 58, 12 -> 47, 58 -> 90, 47 -> 31, .... Start at 12 and follow 3 pointers. Where
do you end?" The full solution writes every hop ("12 -> 47. 47 -> 31. 31 -> 58.") and ends with
``\\boxed{58}``. The table is one cycle through :data:`TABLE_SIZE` distinct two-digit labels,
shown in a shuffled order, and ``k < TABLE_SIZE``: the hops visit distinct nodes, so the node
reached after ``j < k`` hops is never the answer. An answer given before the last hop is wrong by
construction (the CPU study's strong trap needs this; in ``lie.tasks.arithmetic`` a guess is only
*mostly* wrong). Each hop is one lookup in the prompt; a 2-layer model cannot compose several in
one forward pass, so it has to write them.

:func:`trace` reads a response back against its problem (hops written, depth reached, repeats):
the depth columns of the study's evaluation outputs.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from lie.tasks.arithmetic import boxed_answer, check  # one reader of the boxed integer

__all__ = [
    "LABELS", "TABLE_SIZE", "Problem", "Trace", "boxed_answer", "check", "generate", "make_problem",
    "parse_question", "trace", "written_solution",
]  # fmt: skip

TABLE_SIZE = 8  # nodes of the cycle: depths up to 7
LABELS = range(10, 100)  # two-digit node labels
_HOP = re.compile(r"(\d+) -> (\d+)")
_QUESTION = re.compile(r"Pointers: (.*?)\. Start at (\d+) and follow (\d+) pointers?\.")


@dataclass(frozen=True)
class Problem:
    pointers: tuple[tuple[int, int], ...]  # (from, to), in the order the prompt shows them
    start: int
    depth: int

    def table(self) -> dict[int, int]:
        return dict(self.pointers)

    def values(self) -> list[int]:
        """The node reached after each hop."""
        table, out, node = self.table(), [], self.start
        for _ in range(self.depth):
            node = table[node]
            out.append(node)
        return out

    @property
    def answer(self) -> int:
        return self.values()[-1]

    def question(self) -> str:
        shown = ", ".join(f"{a} -> {b}" for a, b in self.pointers)
        noun = "pointer" if self.depth == 1 else "pointers"
        return f"Pointers: {shown}. Start at {self.start} and follow {self.depth} {noun}. Where do you end?"

    def steps(self) -> list[str]:
        nodes = [self.start, *self.values()]
        return [f"{a} -> {b}" for a, b in zip(nodes, nodes[1:])]

    def guess(self, keep_steps: int) -> int:
        """The node reached after ``keep_steps`` hops (the start for 0): an early stop's answer."""
        if not 0 <= keep_steps <= self.depth:
            raise ValueError(f"keep_steps must be in 0..{self.depth}, got {keep_steps}")
        return self.values()[keep_steps - 1] if keep_steps else self.start

    def solution(self) -> str:
        """The full step-by-step solution."""
        return written_solution(self, self.depth)


def make_problem(rng: random.Random, depth: int) -> Problem:
    """A problem of ``depth`` hops on a fresh cycle of :data:`TABLE_SIZE` labels."""
    if not 1 <= depth < TABLE_SIZE:
        raise ValueError(f"depth must be in 1..{TABLE_SIZE - 1} (distinct nodes on the path), got {depth}")
    cycle = rng.sample(LABELS, TABLE_SIZE)
    pointers = [(cycle[i], cycle[(i + 1) % TABLE_SIZE]) for i in range(TABLE_SIZE)]
    rng.shuffle(pointers)
    return Problem(tuple(pointers), rng.choice(cycle), depth)


def generate(count: int, seed: int, min_depth: int, max_depth: int) -> list[Problem]:
    """``count`` problems, depths drawn uniformly from [min_depth, max_depth]; deterministic for a seed."""
    if not 1 <= min_depth <= max_depth < TABLE_SIZE:
        raise ValueError(f"need 1 <= min_depth <= max_depth < {TABLE_SIZE}, got {min_depth}, {max_depth}")
    rng = random.Random(seed)
    return [make_problem(rng, rng.randint(min_depth, max_depth)) for _ in range(count)]


def written_solution(problem: Problem, keep_steps: int, repeats: int = 0) -> str:
    """The first ``keep_steps`` hops, the last one ``repeats`` more times, then the boxed node reached.

    ``keep_steps == depth`` and no repeats is the full solution; fewer hops give a wrong answer.
    """
    steps = problem.steps()[:keep_steps]
    if steps:
        steps += [steps[-1]] * repeats
    return "".join(f"{s}. " for s in steps) + f"The answer is \\boxed{{{problem.guess(keep_steps)}}}."


def parse_question(text: str) -> Problem:
    """The problem a question (or a prompt holding one) states; ValueError when there is none."""
    found = _QUESTION.search(text)
    if not found:
        raise ValueError("no pointer-chasing question in the text")
    pointers = []
    for item in found.group(1).split(", "):
        hop = _HOP.fullmatch(item)
        if not hop:
            raise ValueError(f"bad pointer {item!r} in the question")
        pointers.append((int(hop.group(1)), int(hop.group(2))))
    return Problem(tuple(pointers), int(found.group(2)), int(found.group(3)))


@dataclass(frozen=True)
class Trace:
    """A response read hop by hop against its problem."""

    depth_needed: int
    depth_written: int  # hops written, a repeat of the previous hop not counted
    depth_reached: int  # hops that follow the table from the start, up to the first wrong one
    steps_right: int  # written hops that follow the table from the hop before (or the start)
    repeats: int  # hops that repeat the previous one (padding)
    boxed: int | None  # the last boxed integer


def trace(problem: Problem, response: str) -> Trace:
    """Hops of ``response`` checked against ``problem``'s table."""
    table = problem.table()
    written = right = repeats = reached = 0
    node, previous, on_path = problem.start, None, True
    for hop in _HOP.finditer(response):
        a, b = int(hop.group(1)), int(hop.group(2))
        if (a, b) == previous:
            repeats += 1
            continue
        written += 1
        correct = a == node and table.get(a) == b
        right += correct
        on_path = on_path and correct
        reached += on_path
        node, previous = b, (a, b)
    return Trace(problem.depth, written, reached, right, repeats, boxed_answer(response))
