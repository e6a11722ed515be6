"""The third registration's readings (docs/study/preregistration-v3.md), from per-pair numbers only.

- :func:`binding`: does the trap bind? The median over the GRPO runs of the training samples graded
  right in a run must be at most the registered number (1);
- :func:`decision`: the primary test and its verdict either way. With ``L`` and ``U`` the one-sided
  ``1 - alpha`` lower and upper bounds of the mean paired difference (GRPO + LIE minus GRPO) and ``m``
  the smallest effect of interest: "supported" (``L > 0``, ``U >= m``), "supported, below m" (``L > 0``,
  ``U < m``), "refuted at m" (``L <= 0``, ``U < m``), "inconclusive" (``L <= 0``, ``U >= m``). When the
  binding check fails the verdict carries "the trap did not bind";
- :func:`per_model`: the mean difference per supervised model, a readout without a verdict;
- :func:`run_successes`: a run's training samples graded right, from its per-step points;
- :func:`read_gates`, with :func:`wilson_lower` and :func:`binomial_upper`: the three gates on one-sided
  95% confidence bounds (G1 and G2 Wilson lower bounds, G3 a Clopper-Pearson upper bound), so that no
  gate passes by sampling noise.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lie.core.errors import LieError
from lie.study.inputs import StepPoint
from lie.study.registered import cell
from lie.study.stats import detectable_effect, mean, paired_test, sd

Z95 = 1.6448536269514722  # the standard normal's 95% point: one-sided 95% bounds
NOT_BOUND = "the trap did not bind"  # the registration's words when the binding check fails
INCONCLUSIVE = "inconclusive"


@dataclass(frozen=True)
class Binding:
    successes: tuple[int, ...]  # per GRPO run: training samples graded right over its steps
    max_median: float

    @property
    def median(self) -> float | None:
        values = sorted(self.successes)
        if not values:
            return None
        mid = len(values) // 2
        return float(values[mid]) if len(values) % 2 else (values[mid - 1] + values[mid]) / 2

    @property
    def holds(self) -> bool:
        return self.median is not None and self.median <= self.max_median


def binding(successes: Sequence[int], max_median: float) -> Binding:
    """The binding check over ``successes`` (one count per GRPO run); no run: it does not hold."""
    return Binding(tuple(int(s) for s in successes), float(max_median))


def run_successes(points: Sequence[StepPoint]) -> int:
    """Training samples graded right over a run's steps (each step's accuracy times its samples)."""
    return sum(round(p.accuracy * p.samples) for p in points)


def _verdict(low: float, high: float, sesoi: float) -> str:
    if low > 0:
        return "supported" if high >= sesoi else f"supported, below {sesoi:g}"
    return f"refuted at {sesoi:g}" if high < sesoi else INCONCLUSIVE


def decision(diffs: Sequence[float], alpha: float, sesoi: float, check: Binding) -> dict[str, Any]:
    """The primary row: paired t of ``diffs`` (one-sided), its one-sided bounds and the verdict."""
    test = paired_test(diffs)
    row: dict[str, Any] = {"test": "primary", "n": len(diffs), "alpha": alpha, "sesoi": sesoi,
                           **dict.fromkeys(("estimate", "se", "t", "df", "p", "low", "high"))}  # fmt: skip
    if test is None:
        return row | {"verdict": "no result (too few pairs, or no spread)"}
    low, high = test.bounds(alpha)
    verdict = _verdict(low, high, sesoi)
    if not check.holds:
        verdict = f"{verdict}; {NOT_BOUND}"
    return row | test.as_dict() | {"low": low, "high": high, "verdict": verdict}


def per_model(diffs: Mapping[str, float]) -> list[dict[str, Any]]:
    """``diffs``: pair label (``model/sSEED``) -> difference; per model its n, mean and SD (no verdict)."""
    groups: dict[str, list[float]] = {}
    for label, d in diffs.items():
        groups.setdefault(str(label).rsplit("/", 1)[0], []).append(d)
    rows = []
    for model, values in groups.items():
        spread = sd(values) if len(values) > 1 else None
        rows.append({"test": f"model:{model}", "n": len(values), "estimate": mean(values), "sd": spread,
                     "verdict": "no verdict: a readout"})  # fmt: skip
    return rows


def wilson_lower(successes: int, n: int, z: float = Z95) -> float:
    """One-sided Wilson score lower bound of a binomial share (``z`` = 1.645: 95%)."""
    if n < 1 or not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n, n >= 1; got {successes} of {n}")
    p = successes / n
    centre, half = p + z * z / (2 * n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (centre - half) / (1 + z * z / n)


def _binomial_cdf(k: int, n: int, p: float) -> float:
    if p <= 0:
        return 1.0
    if p >= 1:
        return 1.0 if k >= n else 0.0
    log_p, log_q = math.log(p), math.log1p(-p)
    return sum(
        math.exp(
            math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * log_p + (n - i) * log_q
        )
        for i in range(k + 1)
    )


def binomial_upper(successes: int, n: int, alpha: float = 0.05) -> float:
    """One-sided Clopper-Pearson upper bound: the ``p`` with ``P(X <= successes; n, p) = alpha``."""
    if n < 1 or not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n, n >= 1; got {successes} of {n}")
    if successes == n:
        return 1.0
    low, high = successes / n, 1.0
    for _ in range(200):
        mid = (low + high) / 2
        if _binomial_cdf(successes, n, mid) > alpha:
            low = mid
        else:
            high = mid
        if high - low < 1e-12:
            break
    return (low + high) / 2


@dataclass(frozen=True)
class GateReading:
    """One supervised model's three gates (preregistration-v3.md), each on a one-sided 95% bound."""

    step_low: float  # G1: Wilson lower bound of right steps / written steps, forced-depth probe
    full_low: float  # G2: Wilson lower bound of right samples / samples, forced-depth probe
    right_per_run_high: (
        float  # G3: Clopper-Pearson upper bound of right natural samples, times a run's samples
    )
    passed: tuple[bool, bool, bool]

    @property
    def passes(self) -> bool:
        return all(self.passed)


def read_gates(
    steps_right: int,
    steps_written: int,
    forced_right: int,
    forced_samples: int,
    natural_right: int,
    natural_samples: int,
    *,
    step_accuracy: float,
    full_depth_accuracy: float,
    max_right_per_run: float,
    run_samples: int,
) -> GateReading:
    """G1 step accuracy and G2 full-depth accuracy (forced-depth probe) on their one-sided 95% lower bounds,
    G3 the trap binds (natural probe: right samples expected in a run of ``run_samples``) on its one-sided
    95% upper bound."""
    step_low = wilson_lower(steps_right, steps_written)
    full_low = wilson_lower(forced_right, forced_samples)
    high = binomial_upper(natural_right, natural_samples) * run_samples
    passed = (step_low >= step_accuracy, full_low >= full_depth_accuracy, high <= max_right_per_run)
    return GateReading(step_low, full_low, high, passed)


def decision_rows(
    diffs: Mapping[str, float], check: Binding, alpha: float, sesoi: float, power: float
) -> list[dict[str, Any]]:
    """``study_tests.csv`` of the third registration: the primary test (its verdict the only one), the
    per-model readouts, then the binding check. ``diffs``: pair label (``model/sSEED``) -> difference."""
    values = list(diffs.values())
    primary = decision(values, alpha, sesoi, check)
    spread = sd(values) if len(values) > 1 else None
    primary |= {"comparison": "GRPO + LIE - GRPO, accuracy at the training limit (paired, one-sided)",
                "sd": spread, "power": power,
                "detectable": detectable_effect(spread, len(values), alpha, power) if spread else None}  # fmt: skip
    models = [r | {"comparison": "the same, this supervised model's pairs only"} for r in per_model(diffs)]
    check_row = {"test": "binding", "comparison": "median over the GRPO runs of their right training samples",
                 "estimate": check.median, "n": len(check.successes), "threshold": check.max_median,
                 "verdict": "holds" if check.holds else "fails"}  # fmt: skip
    return [primary, *models, check_row]


def decision_markdown(rows: Sequence[dict[str, Any]], check: Binding) -> list[str]:
    """The third registration's readings, in its words."""

    held = "holds" if check.holds else "**fails**"
    primary = rows[0]
    lines = [
        "## The registered test (docs/study/preregistration-v3.md)",
        "",
        f"Binding check: the median over the {len(check.successes)} GRPO runs of their training samples graded "
        f"right is {cell(check.median, 'g')} (at most {check.max_median:g} registered): {held}. Per run: "
        f"{' '.join(str(s) for s in check.successes) or '—'}."
        + ("" if check.holds else f' The verdict is read with the words "{NOT_BOUND}".'),
        "",
        f"Primary: GRPO + LIE minus GRPO, accuracy at the training limit, {primary['n']} pairs; L and U are the "
        f"one-sided {1 - primary['alpha']:.0%} bounds; smallest effect of interest {primary['sesoi']:g}. Only "
        "this row carries a verdict; the per-model rows are readouts.",
        "",
        "| test | pairs | mean | SD | SE | t | df | one-sided p | L | U | detectable at power (observed SD) "
        "| verdict |",
        "|:---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---|",
    ]
    for r in rows[:-1]:
        detectable = r.get("detectable")
        power = f"{cell(detectable, '.3f')} ({r['power']:g})" if detectable is not None else "—"
        lines.append(
            f"| {r['test']} | {r['n']} | {cell(r.get('estimate'), '+.4f')} | {cell(r.get('sd'), '.4f')} | "
            f"{cell(r.get('se'), '.4f')} | {cell(r.get('t'), '.2f')} | {cell(r.get('df'), 'd')} | "
            f"{cell(r.get('p'), '.4f')} | {cell(r.get('low'), '+.4f')} | {cell(r.get('high'), '+.4f')} | {power} | "
            f"**{r['verdict']}** |"
        )
    return lines


def read_successes(path: str | Path, arm: str) -> list[int]:
    """Per run of ``arm``, its right training samples, from another machine's ``study_steps.csv``
    (accuracy times samples, step by step): the pooled binding check's input."""
    import csv

    try:
        with open(path, newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
    except OSError as exc:
        raise LieError(f"cannot read {path}: {exc.strerror}") from None
    runs: dict[str, int] = {}
    for number, row in enumerate(rows, start=2):
        if row.get("arm") != arm:
            continue
        try:
            runs[row["run"]] = runs.get(row["run"], 0) + round(float(row["accuracy"]) * int(row["samples"]))
        except (KeyError, TypeError, ValueError):
            raise LieError(f"{path} line {number}: run, accuracy and samples must be given") from None
    if not runs:
        raise LieError(f"{path}: no step of arm {arm!r}")
    return list(runs.values())
