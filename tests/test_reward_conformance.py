"""Conformance on the authors' own files (slices in tests/data/shared, and ../shared/data where present).

The oracle here is the SPEC's formula written out directly, and a Counter over the authors' word
split: the fast batch path must agree with both on every row.
"""

from __future__ import annotations

from collections import Counter

import pyarrow.parquet as pq
import pytest
from conftest import full

from lie.core.ngrams import split_words
from lie.core.reward import RewardConfig, score_batch

ETA = 3.33e-5


def spec_length_reward(correct: bool, length: int, ref: int, extra: int) -> float:
    """SPEC 1: -eta * (1 + e / L_ref) * max(0, (L_ref - 500) - L), only for wrong answers."""
    if correct:
        return 0.0
    return -ETA * (1 + extra / ref) * max(0, (ref - 500) - length)


def spec_redundancy(text: str) -> float:
    words = split_words(text)
    if len(words) <= 10:
        return 0.0
    counts = Counter(tuple(words[i : i + 10]) for i in range(len(words) - 9))
    return -0.6 if max(counts.values()) >= 10 else 0.0


def load(path):
    table = pq.read_table(path, columns=["prompt", "reward_model"]).to_pylist()
    texts = [row["prompt"][0]["content"] for row in table]
    refs = [int(row["reward_model"]["num_tokens"]) for row in table]
    return texts, refs


@pytest.mark.parametrize(
    "which", ["authors_dapo", "authors_deepmath", full("full_authors_dapo"), full("full_authors_deepmath")]
)
@pytest.mark.parametrize("extra", [0, 500, 1000])
def test_length_reward_on_every_reference_length(which, extra, request):
    _, refs = load(request.getfixturevalue(which))
    cfg = RewardConfig(extra_tokens=extra)
    for offset in (-501, -500, -499, 0):
        lengths = [max(0, r + offset) for r in refs]
        for correct in (False, True):
            got = score_batch([""] * len(refs), [correct] * len(refs), lengths, refs, cfg)
            for g, length, ref in zip(got, lengths, refs):
                assert g.r_len == pytest.approx(
                    spec_length_reward(correct, length, ref, extra), rel=1e-12, abs=1e-15
                )


@pytest.mark.parametrize("which", ["authors_dapo", full("full_authors_dapo")])
def test_redundancy_and_state_counts_on_real_texts(which, request):
    texts, refs = load(request.getfixturevalue(which))
    texts, looped = texts[:3000], texts[:300]
    # real prompts as they are, and looped: a prompt repeated 9 or 10 times
    responses = texts + [" ".join([t] * 9) for t in looped] + [" ".join([t] * 10) for t in looped]
    n = len(responses)
    got = score_batch(responses, [False] * n, [0] * n, [1000] * n, RewardConfig(length_term=False))
    for text, g in zip(responses, got):
        words = split_words(text)
        windows = Counter(tuple(words[i : i + 10]) for i in range(len(words) - 9))
        assert g.r_red == spec_redundancy(text)
        assert g.max_ngram_count == max(windows.values(), default=0)
        assert g.c_context == (len(windows) if len(words) >= 10 else 1)
    looped10 = got[len(texts) + len(looped) :]
    long_enough = [len(split_words(t)) >= 10 for t in looped]  # a prompt of < 10 words makes no 10-gram
    assert [g.r_red == -0.6 for g in looped10] == long_enough and sum(long_enough) > len(looped) // 2
