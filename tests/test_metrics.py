"""Avg@n and the unbiased pass@k on hand-computed cases (golden values, lighteval style)."""

from __future__ import annotations

from math import comb

import pytest

from lie.core.errors import LieError
from lie.core.metrics import avg_at_n, mean_pass_at_k, metric_name, pass_at_k, summarize

# (n, c, k, value) worked out by hand: 1 - C(n-c, k) / C(n, k)
GOLDEN = [
    (4, 1, 1, 0.25),
    (4, 1, 2, 0.5),  # 1 - 3/6
    (5, 2, 3, 0.9),  # 1 - 1/10
    (10, 3, 4, 1 - 35 / 210),
    (32, 0, 8, 0.0),
    (32, 32, 1, 1.0),
    (32, 30, 4, 1.0),  # fewer than k wrong: some draw of k always holds a right one
    (1, 1, 1, 1.0),
]


@pytest.mark.parametrize("n, c, k, value", GOLDEN)
def test_pass_at_k_golden(n, c, k, value):
    assert pass_at_k(n, c, k) == pytest.approx(value, abs=1e-12)


def test_pass_at_k_matches_the_binomial_formula_everywhere():
    for n in (1, 2, 7, 32):
        for c in range(n + 1):
            for k in range(1, n + 1):
                exact = 1 - comb(n - c, k) / comb(n, k)
                assert pass_at_k(n, c, k) == pytest.approx(exact, abs=1e-12), (n, c, k)
    assert pass_at_k(32, 5, 1) == pytest.approx(5 / 32)  # pass@1 is the fraction correct


def test_avg_and_pass_over_problems():
    problems = [[True, False, False, True], [True, True, True, True], [False] * 4]
    assert avg_at_n(problems) == pytest.approx((0.5 + 1 + 0) / 3)
    assert mean_pass_at_k(problems, 2) == pytest.approx((1 - 1 / 6 + 1 + 0) / 3)
    assert mean_pass_at_k(problems, 1) == pytest.approx(avg_at_n(problems))
    out = summarize(problems)
    assert list(out) == ["avg@n:n=4", "pass@k:k=1&n=4", "pass@k:k=2&n=4", "pass@k:k=4&n=4"]
    assert out["pass@k:k=4&n=4"] == pytest.approx(2 / 3)
    assert summarize([[True], [False]]) == {"avg@n:n=1": 0.5, "pass@k:k=1&n=1": 0.5}


def test_names_and_bad_input():
    assert metric_name("pass@k", k=8, n=32) == "pass@k:k=8&n=32"
    assert metric_name("avg@n", n=32) == "avg@n:n=32"
    with pytest.raises(LieError, match="same number of samples"):
        avg_at_n([[True, False], [True]], what="aime24")
    with pytest.raises(LieError, match="no problems"):
        summarize([])
    with pytest.raises(LieError, match="1 <= k <= n"):
        pass_at_k(4, 1, 5)
