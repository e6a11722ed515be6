"""The third registration's rule (lie.study.decision, docs/study/preregistration-v3.md) on hand-made
per-pair differences: the four verdicts, the binding check and its words, the per-model readout."""

from __future__ import annotations

import math

import pytest

from lie.study.decision import (
    binding,
    binomial_upper,
    decision,
    per_model,
    read_gates,
    run_successes,
    wilson_lower,
)
from lie.study.inputs import StepPoint

T95_23 = 1.714  # printed one-sided 5% point of Student's t, 23 degrees of freedom
BOUND = binding([0] * 13 + [1, 2, 3] * 3 + [5, 9], 1)  # 24 GRPO runs, median 0


def _pairs(mean: float, spread: float, n: int = 24) -> list[float]:
    """``n`` differences with the given mean and SD ``spread * sqrt(n / (n - 1))``."""
    return [mean + spread if i % 2 else mean - spread for i in range(n)]


@pytest.mark.parametrize(
    "mean, spread, verdict",
    [
        (0.10, 0.05, "supported"),  # L = 0.10 - 1.714 * 0.0102 > 0, U > 0.05
        (0.02, 0.01, "supported, below 0.05"),  # L > 0, U = 0.0235 < 0.05
        (0.00, 0.05, "refuted at 0.05"),  # L < 0, U = 0.0175 < 0.05
        (0.03, 0.10, "inconclusive"),  # L = -0.005, U = 0.065
    ],
)
def test_the_four_verdicts(mean, spread, verdict):
    row = decision(_pairs(mean, spread), 0.05, 0.05, BOUND)
    se = spread * math.sqrt(24 / 23) / math.sqrt(24)
    assert row["estimate"] == pytest.approx(mean) and row["se"] == pytest.approx(se) and row["df"] == 23
    assert row["low"] == pytest.approx(mean - T95_23 * se, abs=1e-4)
    assert row["high"] == pytest.approx(mean + T95_23 * se, abs=1e-4)
    assert row["verdict"] == verdict and row["n"] == 24 and row["sesoi"] == 0.05


def test_a_trap_that_did_not_bind_puts_its_words_on_the_verdict():
    loose = binding([0] * 10 + [2] * 14, 1)  # median 2 > 1
    assert not loose.holds and loose.median == 2
    row = decision(_pairs(0.0, 0.05), 0.05, 0.05, loose)
    assert row["verdict"] == "refuted at 0.05; the trap did not bind"
    assert BOUND.holds and BOUND.median == 0


def test_the_binding_check_reads_the_median_of_the_runs():
    assert binding([0, 0, 1, 3], 1).median == 0.5 and binding([0, 0, 1, 3], 1).holds
    assert binding([1, 1, 2], 1).median == 1 and binding([1, 1, 2], 1).holds  # at most 1: holds
    assert not binding([1, 2, 2, 2], 1).holds  # median 2
    assert binding([], 1).median is None and not binding([], 1).holds  # no run: not shown to bind


def test_no_spread_or_one_pair_gives_no_result():
    for diffs in ([0.1], [0.02] * 24):
        row = decision(diffs, 0.05, 0.05, BOUND)
        assert row["verdict"] == "no result (too few pairs, or no spread)" and row["p"] is None


def test_a_runs_successes_are_its_right_training_samples():
    def point(step, accuracy):
        return StepPoint(step=step, samples=64, groups=8, accuracy=accuracy, trap_index=1.0, zero_adv_share=1.0,
                         response_length=10.0, c_context=0.0, r_context=0.0, loop_share=0.0, len_applied=0.0,
                         red_applied=0.0)  # fmt: skip

    assert run_successes([point(1, 0.0), point(2, 1 / 64), point(3, 3 / 64)]) == 4
    assert run_successes([]) == 0


def test_the_mean_difference_per_supervised_model_is_a_readout():
    diffs = {"tiny-v3-m0/s0": 0.1, "tiny-v3-m0/s1": 0.3, "tiny-v3-m1/s0": -0.1}
    rows = {r["test"]: r for r in per_model(diffs)}
    assert rows["model:tiny-v3-m0"]["estimate"] == pytest.approx(0.2) and rows["model:tiny-v3-m0"]["n"] == 2
    assert rows["model:tiny-v3-m0"]["sd"] == pytest.approx(math.sqrt(0.02))
    assert rows["model:tiny-v3-m1"]["sd"] is None
    assert all(r["verdict"] == "no verdict: a readout" for r in rows.values())


def test_the_gates_bounds_match_scipy():
    # scipy 1.17.1 (docs/study/power_v3.py): G3's Clopper-Pearson bound x 1280 for r right of 3392,
    # stats.beta.ppf(0.95, r + 1, 3392 - r) * 1280
    for r, per_run in enumerate((1.13, 1.79, 2.37, 2.92, 3.45)):
        assert binomial_upper(r, 3392) * 1280 == pytest.approx(per_run, abs=5e-3)
    assert binomial_upper(0, 20) == pytest.approx(1 - 0.05 ** (1 / 20))  # the closed form for r = 0
    assert binomial_upper(5, 5) == 1.0
    # G1 and G2: the smallest estimate whose Wilson lower bound reaches the threshold (0.858, 0.327)
    assert wilson_lower(4292, 5000) >= 0.85 > wilson_lower(4291, 5000)
    assert wilson_lower(277, 848) >= 0.30 > wilson_lower(276, 848)
    # v2's tiny-m1 (step accuracy 0.852) would not pass G1 on 5,000 steps
    assert wilson_lower(4260, 5000) < 0.85
    with pytest.raises(ValueError):
        wilson_lower(3, 2)


def test_the_gates_read_their_bounds_with_a_margin():
    registered = {
        "step_accuracy": 0.85,
        "full_depth_accuracy": 0.30,
        "max_right_per_run": 3.0,
        "run_samples": 1280,
    }
    good = read_gates(4400, 5000, 400, 848, 1, 3392, **registered)
    assert good.passes and good.passed == (True, True, True)
    assert good.right_per_run_high == pytest.approx(1.79, abs=5e-3)
    # v2's tiny-m1: 0.852 step accuracy is above 0.85 but not by a margin: G1 fails
    assert read_gates(4260, 5000, 400, 848, 1, 3392, **registered).passed == (False, True, True)
    # 0.31 full-depth accuracy over 848 samples: G2 fails; 4 right natural samples of 3,392: G3 fails
    assert read_gates(4400, 5000, 263, 848, 4, 3392, **registered).passed == (True, False, False)
