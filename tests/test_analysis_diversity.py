"""Diversity across a group of samples: hand-computed cases, and the reward's own n-gram states."""

from __future__ import annotations

import random

import numpy as np
import pytest

from lie.analysis.diversity import group_diversity, mean_of, window_keys
from lie.analysis.dynamics import pick_steps
from lie.core.errors import LieError
from lie.core.ngrams import ngram_stats


def test_two_overlapping_samples_by_hand():
    # windows {a b, b c, c d} and {b c, c d, d e}: 4 distinct of 6; Jaccard 2 / 4
    d = group_diversity(["a b c d", "b c d e"], n=2)
    assert (d.samples, d.windows, d.distinct_windows, d.pairs) == (2, 6, 4, 1)
    assert d.distinct == pytest.approx(4 / 6) and d.overlap == pytest.approx(0.5)


def test_identical_samples_and_disjoint_samples():
    same = group_diversity(["x y z"] * 3, n=2)
    assert same.distinct == pytest.approx(2 / 6) and same.overlap == 1.0 and same.pairs == 3
    apart = group_diversity(["a b c", "d e f", "g h i"], n=2)
    assert apart.distinct == 1.0 and apart.overlap == 0.0


def test_the_rewards_word_split():
    # "a_b c" is the words a, b, c (split on "_", as R_red); case matters
    d = group_diversity(["a_b c", "a b c", "A b c"], n=2)
    assert d.windows == 6 and d.distinct_windows == 3  # {a b, b c} and {A b}
    assert d.overlap == pytest.approx((1 + 1 / 3 + 1 / 3) / 3)


def test_samples_without_a_window():
    nothing = group_diversity(["a", "b c"], n=3)
    assert (nothing.windows, nothing.distinct, nothing.overlap) == (0, None, None)
    one = group_diversity(["a b c", "x"], n=2)  # a pair with an empty state set says nothing
    assert (one.distinct, one.overlap, one.pairs) == (1.0, None, 0)


def test_window_keys_are_the_c_context_states():
    rng = random.Random(0)
    words = ["x", "y", "z", "the", "wait", "so", "1", "=", "a_b"]
    for _ in range(200):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(0, 60)))
        for n in (1, 3, 10):
            keys, stats = window_keys(text, n), ngram_stats(text, n=n)
            assert len(keys) == stats.num_ngrams and len(np.unique(keys)) == stats.distinct
    ids = [rng.randrange(50) for _ in range(300)]
    keys, stats = window_keys(None, 10, "token", ids), ngram_stats(None, ids, n=10, unit="token")
    assert len(np.unique(keys)) == stats.distinct
    tokens = group_diversity([None, None], 2, "token", [[1, 2, 3], [2, 3, 4]])
    assert tokens.distinct == pytest.approx(3 / 4) and tokens.overlap == pytest.approx(1 / 3)


def test_mean_of_leaves_gaps_out():
    assert mean_of([1.0, None, 3.0, float("nan")]) == 2.0
    assert mean_of([None]) is None and mean_of([]) is None


def test_pick_steps_keeps_the_ends_evenly():
    assert pick_steps([1, 2, 3], 5) == [1, 2, 3]
    assert pick_steps(list(range(1, 101)), 5) == [1, 26, 51, 75, 100]
    assert pick_steps(list(range(10)), 2) == [0, 9]
    with pytest.raises(LieError):
        pick_steps([1, 2], 1)
