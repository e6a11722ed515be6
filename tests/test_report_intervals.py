"""The ours − paper interval covers the real difference about 95% of the time.

A fixed model on fixed problems (each problem's chance p of a right sample), evaluated twice with
fresh samples: once as "the paper" and once as "ours". The real difference is re-sampling noise
alone; the table's interval (``lie.report.intervals.versus_paper`` from our run's per-problem
scores, as ``lie.report.tables`` calls it) should hold it in about 95% of the repeats: not ~100%
(an interval so wide that a reproduction losing LIE's whole gain would read "inside the noise").
"""

from __future__ import annotations

import numpy as np
import pytest

from lie.report import intervals as iv

REPEATS = 2000


def coverage(p: np.ndarray, k: int, seed: int) -> tuple[float, float]:
    """Share of repeats whose 95% interval holds ours − paper: (today's interval, √2 · SE(ours))."""
    rng = np.random.default_rng(seed)
    held = held_between = 0
    for _ in range(REPEATS):
        ours, paper = rng.binomial(k, p), rng.binomial(k, p)
        scores = {i: iv.Share(int(c), k) for i, c in enumerate(ours)}
        diff = float(np.mean(ours) - np.mean(paper)) / k
        se = iv.versus_paper([iv.noise_se(iv.resampling_se(scores), iv.bench_se(scores))])
        held += bool(iv.inside_noise(diff, se))
        held_between += bool(iv.inside_noise(diff, iv.versus_paper([iv.bench_se(scores)])))
    return held / REPEATS, held_between / REPEATS


def test_avg_at_32_on_aime_like_problems_is_covered_95_percent_not_100():
    # 30 problems, most nearly always or never solved (AIME at ~40%): the difficulty spread is large
    p = np.random.default_rng(7).beta(0.4, 0.6, size=30)
    got, between = coverage(p, k=32, seed=1)
    assert 0.93 <= got <= 0.97
    assert between > 0.995  # √2 · SE(ours), the spread of difficulty, covers almost always


def test_avg_at_4_on_amc_like_problems_is_covered_95_percent():
    p = np.random.default_rng(8).beta(0.8, 0.5, size=83)
    got, _ = coverage(p, k=4, seed=2)
    assert 0.93 <= got <= 0.97


def test_pass_at_1_keeps_the_between_problem_error():
    # one sample a problem: p(1-p) is unknown, the spread between problems stands in for it; on problems
    # of like difficulty (GPQA-Diamond near 50%) that is the re-sampling noise, and it covers ~95%
    p = np.random.default_rng(9).uniform(0.3, 0.7, size=198)
    scores = {i: iv.Share(1, 1) for i in range(3)}
    assert iv.resampling_se(scores) is None
    got, between = coverage(p, k=1, seed=3)
    assert got == between and 0.93 <= got <= 0.975


def test_a_share_remembers_its_samples():
    share = iv.Share(3, 4)
    assert share == pytest.approx(0.75) and (share.correct, share.samples) == (3, 4)
    lines = [dict(bench="b", index=0, grades={"8": {"correct": c}}) for c in (True, False, False, True)]
    (read,) = iv.problem_scores(lines, 8, [])[None]["b"].values()
    assert (read, read.samples) == (0.5, 4)


@pytest.mark.parametrize("values", [[1.0, 0.0], [1.0, 0.0, 0.0], [0.25, 0.5, 1.0, 0.0, 0.75]])
def test_the_standard_error_divides_by_p_minus_one(values):
    """A benchmark's SE is the sample standard deviation of its problems' shares (n - 1, Bessel's
    correction) over sqrt(P): with 2 problems, dividing by n instead reads 1/sqrt(2) of the real error,
    which the 95% coverage above, on 30 to 198 problems, does not see."""
    import statistics

    scores = dict(enumerate(values))
    expected = statistics.stdev(values) / len(values) ** 0.5
    assert iv.bench_se(scores) == pytest.approx(expected, rel=1e-12)
    other = {i: 1.0 - v / 2 for i, v in scores.items()}  # a paired difference, problem by problem
    diffs = [scores[i] - other[i] for i in scores]
    assert iv.paired_se(scores, other) == pytest.approx(
        statistics.stdev(diffs) / len(diffs) ** 0.5, rel=1e-12
    )
    assert iv.bench_se({0: 1.0}) is None  # one problem: no spread to read
