"""Paired differences by seed (arm minus baseline, same seed) and the pre-registered verdicts.

Runs of one seed share their supervised model, data order and first rollout batch, so their
difference removes what the seeds share; the spread of the differences over seeds is the noise
a verdict is read against. The interval is Student's t at 95% on the mean difference.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

# Two-sided 95% quantiles of Student's t by degrees of freedom (no scipy in the CPU environment).
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228}


@dataclass(frozen=True)
class Paired:
    seeds: tuple[int, ...]
    diffs: tuple[float, ...]

    @property
    def mean(self) -> float:
        return sum(self.diffs) / len(self.diffs)

    @property
    def half_width(self) -> float | None:
        """Half the 95% interval of the mean (None with one seed)."""
        n = len(self.diffs)
        if n < 2:
            return None
        sd = math.sqrt(sum((d - self.mean) ** 2 for d in self.diffs) / (n - 1))
        return T95.get(n - 1, 1.96) * sd / math.sqrt(n)

    @property
    def positive(self) -> int:
        return sum(d > 0 for d in self.diffs)


def paired(arm: Mapping[int, float], base: Mapping[int, float]) -> Paired:
    """``arm[seed] - base[seed]`` over the seeds both have, in seed order."""
    seeds = tuple(sorted(set(arm) & set(base)))
    return Paired(seeds, tuple(arm[s] - base[s] for s in seeds))


RULE_MET_NO_EVIDENCE = "rule met; no evidence of an effect"


def verdict(p: Paired, prediction: str, min_positive: int, zero_margin: float) -> str:
    """The pre-registered reading of ``p``: "positive" needs > 0 in ``min_positive`` seeds and a mean
    > 0, and is "supported" only when the 95% interval also excludes zero (the rule alone passes ~29%
    of the time with no effect at 4 seeds); "zero" needs ``|mean| <= zero_margin``."""
    if prediction == "positive":
        if not (p.positive >= min(min_positive, len(p.diffs)) and p.mean > 0):
            return "not supported"
        half = p.half_width
        return "supported" if half is not None and p.mean - half > 0 else RULE_MET_NO_EVIDENCE
    if prediction == "zero":
        return "as predicted" if abs(p.mean) <= zero_margin else "not as predicted"
    raise ValueError(f"unknown prediction {prediction!r}")
