"""The numbers of docs/study/preregistration-v3.md, "Power" and the gates' margins, and the post-hoc
intervals of the second study that docs/study.md quotes.

Needs scipy (not in the study's environment): ``python -m venv /tmp/sp && /tmp/sp/bin/pip install scipy
&& /tmp/sp/bin/python docs/study/power_v3.py``. Run with scipy 1.17.1 when the registration was written.
The second study's inputs are its reported means, SDs and SEs (docs/study.md), rounded as printed there.
"""

import math

from scipy import stats
from scipy.optimize import brentq

SESOI, ALPHA, POWER = 0.05, 0.05, 0.8


def detectable(sd: float, n: int) -> float:
    """Smallest true mean difference the one-sided paired t at ALPHA detects with POWER (noncentral t)."""
    df, tc = n - 1, stats.t.ppf(1 - ALPHA, n - 1)
    return brentq(lambda d: stats.nct.sf(tc, df, d * math.sqrt(n) / sd) - POWER, 1e-6, 1.0)


def p_refuted(delta: float, sd: float, n: int) -> float:
    """P(mean + t[0.95] SE < SESOI): "refuted at 0.05" when the true effect is ``delta``."""
    df, tc = n - 1, stats.t.ppf(1 - ALPHA, n - 1)
    return stats.nct.cdf(-tc, df, (delta - SESOI) * math.sqrt(n) / sd)


def p_supported(delta: float, sd: float, n: int) -> float:
    """P(one-sided p < ALPHA) when the true effect is ``delta``."""
    df, tc = n - 1, stats.t.ppf(1 - ALPHA, n - 1)
    return stats.nct.sf(tc, df, delta * math.sqrt(n) / sd)


def wilson_low(x: int, n: int) -> float:
    z, p = stats.norm.ppf(1 - ALPHA), x / n
    centre, half = p + z * z / (2 * n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (centre - half) / (1 + z * z / n)


def main() -> None:
    print("paired SD, pairs: detectable (80%), P(refuted | 0), P(supported | 0.10)")
    for sd in (0.079, 0.101, 0.120):
        for n in (16, 24):
            print(f"  {sd:.3f} {n:2d}: {detectable(sd, n):.3f} {p_refuted(0, sd, n):.2f} {p_supported(0.10, sd, n):.2f}")
    print("gates: the estimate whose one-sided 95% Wilson lower bound reaches the threshold")
    for threshold, n in ((0.85, 5000), (0.30, 848)):
        x = next(x for x in range(n + 1) if wilson_low(x, n) >= threshold)
        print(f"  {threshold} over {n}: {x / n:.3f}")
    print("G3: one-sided 95% Clopper-Pearson upper bound of r / 3392, times 1280")
    for r in range(5):
        print(f"  r = {r}: {stats.beta.ppf(1 - ALPHA, r + 1, 3392 - r) * 1280:.2f}")
    print("the second study, post hoc (95% two-sided intervals; one-sided 95% upper bounds)")
    for name, mean, sd, n in (("make study-full primary", 0.027, 0.101, 30), ("make study primary", 0.048, 0.120, 12)):
        se, df = sd / math.sqrt(n), n - 1
        low, high = mean - stats.t.ppf(0.975, df) * se, mean + stats.t.ppf(0.975, df) * se
        print(f"  {name}: [{low:+.3f}, {high:+.3f}], upper {mean + stats.t.ppf(0.95, df) * se:+.3f}")
    for name, est, se, df in (("slope", 0.054, 0.095, 58), ("interaction", 0.010, 0.021, 41)):
        half = stats.t.ppf(0.975, df) * se
        print(f"  {name}: [{est - half:+.3f}, {est + half:+.3f}], upper {est + stats.t.ppf(0.95, df) * se:+.3f}")


if __name__ == "__main__":
    main()
