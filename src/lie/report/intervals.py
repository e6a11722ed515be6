"""Sampling noise of the report's numbers, from the per-problem scores (``scores/<key>/scores.jsonl``).

A benchmark's accuracy is the mean over its P problems of each problem's share of correct samples;
its standard error is the standard deviation of those shares over sqrt(P) (with one sample a
problem, pass@1 on GPQA's 198 problems near 50% is about ±3.5 points). A domain average is the
mean of its benchmarks, so its standard error is sqrt(sum of theirs squared) / B.

Two runs on the same problems (LIE against its baseline) are compared problem by problem: the
standard error of the difference is that of the per-problem differences (paired). That interval
takes the problems as a sample of their kind (another set of AIME-like problems).

The paper publishes no per-problem scores. Where our inputs are the authors' (the in-domain
benchmarks), its number and ours are taken as two re-samplings of the same model on the same
problems, fixed: the spread of difficulty between problems cancels and what is left is the
re-sampling noise. With k > 1 samples a problem, Var(ours) = sum of p(1-p)/(k-1) over the P
problems, / P², and SE(ours − paper) = sqrt(2 · Var). With one sample a problem the re-sampling
noise cannot be told from the difficulty spread, and the between-problem SE stands in for it
(conservative by that spread); it is also the right one where the problems or prompts differ
from the authors' (the out-of-domain benchmarks): problems as a sample. A domain average
combines its benchmarks one by one (:func:`noise_se`), each with the error its k allows.
No interval includes the variance of training again with another seed.
A difference is *inside the noise* when its 95% interval, Δ ± 1.96 · SE(Δ), holds 0.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from lie.core.errors import LieError
from lie.formats.graded import read_graded_lines

Z95 = 1.96


class Share(float):
    """A problem's share of correct samples, remembering over how many samples (its re-sampling noise)."""

    correct: int
    samples: int

    def __new__(cls, correct: int, samples: int) -> Share:
        share = super().__new__(cls, correct / samples)
        share.correct, share.samples = correct, samples
        return share

    def __getnewargs__(self) -> tuple[int, int]:  # type: ignore[override]  # copies and pickles
        return self.correct, self.samples


ProblemScores = dict[str, dict[int, Share]]  # bench -> problem index -> share of correct samples


def read_problem_scores(path: Path, budget: int, readers: Sequence[str]) -> dict[str | None, ProblemScores]:
    """:func:`problem_scores` of a scores file (``lie evaluate --out-scores``)."""
    lines = read_graded_lines(path, "rerun `lie evaluate` (the report's intervals read it)")
    return problem_scores(lines, budget, readers, str(path))


def problem_scores(
    lines: Iterable[dict[str, Any]], budget: int, readers: Sequence[str], where: str = "scores"
) -> dict[str | None, ProblemScores]:
    """Per reader (``None``: the main grades), each benchmark's per-problem shares at ``budget``.

    A multiple-choice line is read under a reader from its ``grades_by_reader``; a benchmark whose
    lines have none for that reader is left out of that reader's scores.
    """
    sums: dict[str | None, dict[str, dict[int, list[int]]]] = {
        r: defaultdict(lambda: defaultdict(lambda: [0, 0])) for r in (None, *readers)
    }
    key = str(budget)
    for number, line in enumerate(lines, 1):
        try:
            for reader, by_bench in sums.items():
                grades = line["grades"] if reader is None else _reader_grades(line, reader)
                if grades is not None:
                    cell = by_bench[line["bench"]][int(line["index"])]
                    cell[0] += bool(grades[key]["correct"])
                    cell[1] += 1
        except (ValueError, KeyError, TypeError) as exc:
            raise LieError(
                f"{where} line {number}: not a `lie evaluate` score line with budget {budget} ({exc!r}); "
                "rerun `lie evaluate`"
            ) from None
    return {
        reader: {
            bench: {i: Share(c, n) for i, (c, n) in problems.items()} for bench, problems in by_bench.items()
        }
        for reader, by_bench in sums.items()
    }


def _reader_grades(line: dict[str, Any], reader: str) -> dict[str, Any] | None:
    by_reader = line.get("grades_by_reader")
    if by_reader is None:
        return line["grades"] if line.get("kind") != "choice" else None
    return by_reader.get(reader)


def _se(values: Sequence[float]) -> float | None:
    """Standard error of the mean of ``values`` (None for fewer than two)."""
    count = len(values)
    if count < 2:
        return None
    array = np.fromiter(values, dtype=float, count=count)  # MMLU-Pro's 12k problems, many times a report
    return float(array.std(ddof=1)) / math.sqrt(count)


def bench_se(scores: Mapping[int, float]) -> float | None:
    """Standard error (as a fraction) of a benchmark's accuracy."""
    return _se(list(scores.values()))


def paired_se(a: Mapping[int, float], b: Mapping[int, float]) -> float | None:
    """Standard error of mean(a) - mean(b) over the problems both hold (None when they share none)."""
    shared = sorted(set(a) & set(b))
    if len(shared) != len(a) or len(shared) != len(b):
        return None  # not the same problems: no paired comparison
    return _se([a[i] - b[i] for i in shared])


def combined_se(parts: Sequence[float | None]) -> float | None:
    """Standard error of the mean of independent estimates with standard errors ``parts``."""
    known = [p for p in parts if p is not None]
    if not parts or len(known) != len(parts):
        return None
    return math.sqrt(sum(p * p for p in known)) / len(parts)


def resampling_se(scores: Mapping[int, Share]) -> float | None:
    """Standard error of a benchmark's accuracy from re-sampling alone (same model, same problems):
    sqrt(sum of p(1-p)/(k-1)) / P; None where a problem has one sample (p(1-p) is then unknown)."""
    if not scores or any(s.samples < 2 for s in scores.values()):
        return None
    return math.sqrt(sum(s * (1 - s) / (s.samples - 1) for s in scores.values())) / len(scores)


def noise_se(resampling: float | None, between: float | None) -> float | None:
    """One benchmark's noise against the paper's number: the re-sampling SE where it is known (k > 1),
    else (one sample a problem, ``resampling`` None) the between-problem SE."""
    return resampling if resampling is not None else between


def versus_paper(parts: Sequence[float | None]) -> float | None:
    """SE of ours − paper over the benchmarks with noises ``parts`` (:func:`noise_se`; one part for a
    benchmark, several for a domain average): √2 · their :func:`combined_se` (both numbers carry it)."""
    se = combined_se(parts)
    return None if se is None else math.sqrt(2.0) * se


def inside_noise(diff: float | None, se: float | None) -> bool | None:
    """True when the 95% interval of ``diff`` holds 0 (None when either is unknown)."""
    if diff is None or se is None:
        return None
    return abs(diff) <= Z95 * se
