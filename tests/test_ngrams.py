"""The fast n-gram counts agree with the plain definition on every input drawn."""

from __future__ import annotations

import sys
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lie.core import ngrams
from lie.core.ngrams import ngram_stats, split_words, unit_hashes


def oracle(units: list, n: int) -> tuple[int, int, int]:
    """(windows, distinct, max count) by a Counter over tuples: the plain definition."""
    windows = Counter(tuple(units[i : i + n]) for i in range(len(units) - n + 1))
    return sum(windows.values()), len(windows), max(windows.values(), default=0)


# small alphabets so that repeats happen; separators of every kind Python's split knows
WORDS = st.sampled_from(["a", "b", "ab", "_", "__", "x_y", "é", "猫", "\\frac{1}{2}", "1.", "A", ""])
SEPS = st.sampled_from([" ", "  ", "\n", "\t", "\u3000", "\xa0", "\u2028", "\x1c", "\x85", "_", ""])
TEXTS = st.lists(st.tuples(WORDS, SEPS), max_size=120).map(lambda parts: "".join(w + s for w, s in parts))


def test_split_words_matches_the_authors_rule():
    assert split_words("a_b  c__d _e_ ") == ["a", "b", "c", "", "d", "", "e", ""]
    assert split_words("") == [] and split_words(" \n\t ") == []
    assert split_words("α\u3000β\xa0γ") == ["α", "β", "γ"]
    assert split_words("Case case") == ["Case", "case"]


def test_no_whitespace_above_u3000():
    """The fast path maps non-ASCII spaces up to U+3000 to ' '; none exists beyond it."""
    beyond = [c for c in range(0x3001, sys.maxunicode + 1) if chr(c).isspace()]
    assert beyond == []


@settings(max_examples=400, deadline=None)
@given(TEXTS)
def test_word_hashes_identify_the_same_words(text):
    words = split_words(text)
    hashes = unit_hashes(text)
    assert len(hashes) == len(words)
    # equal hashes exactly where the words are equal
    first_seen: dict[str, int] = {}
    for i, w in enumerate(words):
        j = first_seen.setdefault(w, i)
        assert (hashes[i] == hashes[j]) == (words[i] == words[j])
    assert len(set(hashes.tolist())) == len(set(words))


@settings(max_examples=400, deadline=None)
@given(TEXTS, st.integers(min_value=1, max_value=6))
def test_word_ngram_stats_match_the_counter_definition(text, n):
    words = split_words(text)
    stats = ngram_stats(text, n=n)
    assert stats.num_units == len(words)
    assert (stats.num_ngrams, stats.distinct, stats.max_count) == oracle(words, n)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=5), max_size=200), st.integers(min_value=1, max_value=10))
def test_token_ngram_stats_match_the_counter_definition(ids, n):
    stats = ngram_stats(token_ids=ids, n=n, unit="token")
    assert (stats.num_ngrams, stats.distinct, stats.max_count) == oracle(ids, n)


def thue_morse(k: int) -> str:
    bits = [0]
    for _ in range(k):
        bits += [1 - b for b in bits]
    return "".join("ab"[b] for b in bits)


def test_long_thue_morse_words_stay_distinct():
    """A polynomial hash modulo 2**64 cannot tell these 1,024-byte words apart; ours must."""
    word = thue_morse(10)
    twin = word.translate(str.maketrans("ab", "ba"))
    text = " ".join([word, twin] * 3)
    stats = ngram_stats(text, n=1)
    assert (stats.distinct, stats.max_count) == (2, 3)
    assert ngram_stats(text, n=2).distinct == 2


def test_hashes_do_not_depend_on_table_growth():
    text = "alpha beta_gamma " * 50
    before = unit_hashes(text)
    ngrams._POWERS.grow(ngrams._POWERS.size * 4)
    assert np.array_equal(before, unit_hashes(text))
    assert ngram_stats("x" * 300_000 + " y " + "x" * 300_000, n=1).max_count == 2


def test_lone_surrogates_and_control_characters_do_not_crash():
    text = "a\ud800b c\x00d a\ud800b c\x00d"
    assert ngram_stats(text, n=2).max_count == 2


def test_unit_errors_are_clear():
    with pytest.raises(ValueError, match="unknown unit"):
        unit_hashes("a", unit="char")
    with pytest.raises(ValueError, match="needs the response's token_ids"):
        unit_hashes("a", unit="token")
