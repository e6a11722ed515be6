"""The Shallow Exploration Trap in numbers: analytic before any run, measured on groups after.

A supervised policy that stops after each step with probability ``s`` writes at least ``k`` steps
with probability ``(1 - s) ** k``; with a share ``a`` of its written steps right, a problem of
depth ``k`` is solved with ``q = ((1 - s) * a) ** k``. GRPO's advantage from accuracy is zero in a
group of ``n`` samples that all get the same grade, which happens with ``(1 - q) ** n + q ** n``:
the *trap index*. Measured, it is the share of prompt groups whose samples all got the same grade.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def solve_probability(stop_prob: float, depth: int, step_accuracy: float = 1.0) -> float:
    """``q``: one sample writes all ``depth`` steps, each right."""
    return ((1.0 - stop_prob) * step_accuracy) ** depth


def group_trap(q: float, n: int) -> float:
    """Probability that ``n`` samples, each right with ``q``, all get the same grade."""
    return (1.0 - q) ** n + q**n


def analytic_trap_index(
    stop_prob: float, depths: tuple[int, int], n: int, step_accuracy: float = 1.0
) -> float:
    """Mean trap index over depths uniform in ``depths`` (inclusive)."""
    ks = range(depths[0], depths[1] + 1)
    return sum(group_trap(solve_probability(stop_prob, k, step_accuracy), n) for k in ks) / len(ks)


def analytic_full_share(stop_prob: float, depths: tuple[int, int]) -> float:
    """Mean ``(1 - s) ** k`` over depths uniform in ``depths``: samples that write the full depth."""
    ks = range(depths[0], depths[1] + 1)
    return sum((1.0 - stop_prob) ** k for k in ks) / len(ks)


def trap_index(groups: Iterable[Sequence[bool]]) -> float:
    """Share of groups whose samples all have the same grade (nan for no groups)."""
    flags = [len(set(g)) <= 1 for g in groups]
    return sum(flags) / len(flags) if flags else float("nan")
