"""The second registration's tests (docs/study/preregistration-v2.md), without scipy.

- :func:`paired_test`: one-sided paired t-test of the mean difference (arm minus baseline, same seed)
  against zero;
- :func:`detectable_effect`: the smallest true mean difference that test detects with the given power,
  ``(t[1 - alpha] + t[power]) * sd / sqrt(n)`` (the usual approximation of the noncentral t);
- :func:`interaction`: the mean paired difference of one level minus that of another, a one-sided
  Welch test (degrees of freedom rounded down, which is conservative; no result where a level has no
  spread);
- :func:`slope`: the least-squares slope of per-pair differences on a level's trap strength, with its
  one-sided t-test on ``n - 2`` degrees of freedom.

Student's t distribution for integer degrees of freedom is exact here (Abramowitz and Stegun 26.7.3
and 26.7.4: a finite series in ``cos(theta)``, ``theta = atan(t / sqrt(df))``); quantiles by bisection.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


def t_within(t: float, df: int) -> float:
    """``P(|T| <= t)`` for Student's t with ``df`` (integer >= 1) degrees of freedom, ``t >= 0``."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be >= 1, got {df}")
    theta = math.atan(abs(t) / math.sqrt(df))
    c2 = math.cos(theta) ** 2
    if df % 2 == 1:
        term, total = 1.0, 1.0 if df > 1 else 0.0
        for j in range(1, (df - 1) // 2):  # 1 + 2/3 c^2 + 2*4/(3*5) c^4 + ... up to c^(df-3)
            term *= c2 * (2 * j) / (2 * j + 1)
            total += term
        return 2 / math.pi * (theta + math.sin(theta) * math.cos(theta) * total)
    term = total = 1.0
    for j in range(1, df // 2):  # 1 + 1/2 c^2 + 1*3/(2*4) c^4 + ... up to c^(df-2)
        term *= c2 * (2 * j - 1) / (2 * j)
        total += term
    return math.sin(theta) * total


def t_sf(t: float, df: int) -> float:
    """``P(T > t)``: the one-sided p-value of ``t``."""
    inner = t_within(t, df)
    return (1 - inner) / 2 if t >= 0 else (1 + inner) / 2


def t_quantile(p: float, df: int) -> float:
    """``t`` with ``P(T <= t) = p`` (bisection to 1e-10)."""
    if not 0 < p < 1:
        raise ValueError(f"p must be in (0, 1), got {p}")
    low, high = -1e3, 1e3
    for _ in range(200):
        mid = (low + high) / 2
        if 1 - t_sf(mid, df) < p:
            low = mid
        else:
            high = mid
        if high - low < 1e-10:
            break
    return (low + high) / 2


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def sd(values: Sequence[float]) -> float:
    """The sample standard deviation (n - 1)."""
    m = mean(values)
    return math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1))


@dataclass(frozen=True)
class Test:
    """A one-sided test of ``estimate > 0``: the estimate, its standard error, t, df and p."""

    estimate: float
    se: float
    t: float
    df: int
    p: float
    n: int

    def bounds(self, alpha: float) -> tuple[float, float]:
        """The one-sided (1 - alpha) lower and upper bounds of the estimate (together a 1 - 2 alpha interval)."""
        half = t_quantile(1 - alpha, self.df) * self.se
        return self.estimate - half, self.estimate + half

    def as_dict(self, prefix: str = "") -> dict[str, float | int]:
        return {f"{prefix}{k}": getattr(self, k) for k in ("estimate", "se", "t", "df", "p", "n")}


def _test(estimate: float, se: float, df: int, n: int) -> Test | None:
    if df < 1 or se <= 0:
        return None
    t = estimate / se
    return Test(estimate, se, t, df, t_sf(t, df), n)


SPREAD_TOL = 1e-12  # values closer than this are equal: no spread (floating-point noise is not variance)


def _spread(values: Sequence[float]) -> bool:
    return max(values) - min(values) > SPREAD_TOL


def paired_test(diffs: Sequence[float]) -> Test | None:
    """One-sided paired t-test of ``mean(diffs) > 0`` (None with fewer than 2 pairs or no spread)."""
    n = len(diffs)
    if n < 2 or not _spread(diffs):
        return None
    return _test(mean(diffs), sd(diffs) / math.sqrt(n), n - 1, n)


def detectable_effect(sd: float, n: int, alpha: float = 0.05, power: float = 0.8) -> float:
    """The smallest mean difference a one-sided paired t-test at ``alpha`` detects with ``power``."""
    df = n - 1
    return (t_quantile(1 - alpha, df) + t_quantile(power, df)) * sd / math.sqrt(n)


def interaction(strong: Sequence[float], weak: Sequence[float]) -> Test | None:
    """One-sided Welch test of ``mean(strong) - mean(weak) > 0`` (paired differences of two levels).

    None with fewer than 2 pairs in a level or a level without spread: Welch estimates each level's
    variance from its own pairs, and a level whose differences are all equal gives no estimate (the test
    would rest on the other level's variance alone)."""
    if len(strong) < 2 or len(weak) < 2 or not (_spread(strong) and _spread(weak)):
        return None
    v1, v2 = sd(strong) ** 2 / len(strong), sd(weak) ** 2 / len(weak)
    df = (v1 + v2) ** 2 / (v1**2 / (len(strong) - 1) + v2**2 / (len(weak) - 1))
    estimate = mean(strong) - mean(weak)
    return _test(estimate, math.sqrt(v1 + v2), max(1, math.floor(df)), len(strong) + len(weak))


def slope(xs: Sequence[float], ys: Sequence[float]) -> Test | None:
    """Least-squares slope of ``ys`` on ``xs`` and its one-sided t-test of ``slope > 0`` (``n - 2`` df)."""
    n = len(xs)
    if n != len(ys):
        raise ValueError(f"{n} x values for {len(ys)} y values")
    if n < 3:
        return None
    mx, my = mean(xs), mean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx <= 0:
        return None
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    residual = sum((y - my - b * (x - mx)) ** 2 for x, y in zip(xs, ys))
    return _test(b, math.sqrt(residual / (n - 2) / sxx), n - 2, n)
