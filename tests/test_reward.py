"""Every term of the LIE reward at its boundaries, the knobs, and properties that must always hold."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lie.core.errors import LieError
from lie.core.reward import RewardConfig, length_reward, score, score_batch

CODE = RewardConfig()
BLOCK = " ".join(f"w{i}" for i in range(10))  # ten distinct words


def looped(times: int, tail: str = "end of the answer") -> str:
    """A block of 10 distinct words repeated ``times`` times: its first 10-gram occurs ``times`` times."""
    return " ".join([BLOCK] * times + [tail])


# ---- R_red ------------------------------------------------------------------------------------


def test_nine_repeats_pass_ten_repeats_are_penalised():
    nine, ten = score(looped(9), False, 5000, 3000), score(looped(10), False, 5000, 3000)
    assert (nine.max_ngram_count, nine.r_red) == (9, 0.0)
    assert (ten.max_ngram_count, ten.r_red) == (10, -0.6)


def test_strict_threshold_of_the_paper_text():
    strict = CODE.replace(theta_inclusive=False)
    assert score(looped(10), False, 5000, 3000, strict).r_red == 0.0
    assert score(looped(11), False, 5000, 3000, strict).r_red == -0.6


def test_n_words_or_fewer_are_never_penalised():
    theta1 = CODE.replace(theta=1)
    ten_words = score("a " * 10, False, 10, 3000, theta1)
    assert ten_words.max_ngram_count == 1 and ten_words.r_red == 0.0
    eleven = score("a " * 11, False, 11, 3000, CODE.replace(theta=2))
    assert eleven.max_ngram_count == 2 and eleven.r_red == -0.6


def test_penalty_applies_to_correct_answers_unless_switched_off():
    assert score(looped(12), True, 5000, 3000).reward == pytest.approx(0.4, abs=0)
    off = CODE.replace(red_on_correct=False)
    assert score(looped(12), True, 5000, 3000, off).r_red == 0.0
    assert score(looped(12), False, 5000, 3000, off).r_red == -0.6


def test_underscores_split_words():
    # one whitespace token per block: 10 pieces joined by '_' -> the loop is seen only through '_'
    text = " ".join(["_".join(f"w{i}" for i in range(10))] * 10)
    assert score(text, False, 100, 3000).r_red == -0.6
    assert len(text.split()) == 10  # whitespace alone would see 10 words and no loop


def test_unicode_words_and_spaces():
    block = "\u3000".join(["ß", "猫", "é", "ω", "x²", "∑", "→", "😀", "ñ", "ü"])  # ideographic spaces
    text = "\xa0".join([block] * 10)
    result = score(text, False, 100, 3000)
    assert result.max_ngram_count == 10 and result.r_red == -0.6
    assert score("猫 " * 5, False, 5, 3000).c_context == 1


def test_empty_and_whitespace_only_responses():
    for text in ("", " \n\t\u3000 "):
        r = score(text, False, 0, 3000)
        assert (r.max_ngram_count, r.r_red, r.c_context, r.r_context) == (0, 0.0, 1, 1.0)
        paper = score(text, False, 0, 3000, CODE.replace(variant="paper"))
        assert paper.c_context == 0 and paper.r_context == 1.0


def test_fewer_words_than_n():
    r = score("only nine words in this response, nothing more here", False, 9, 3000)
    assert (r.max_ngram_count, r.c_context, r.r_context, r.num_ngrams) == (0, 1, 1.0, 0)


def test_state_metrics_count_distinct_windows():
    r = score(looped(3, tail=""), False, 30, 3000)  # 30 words, 21 windows, 10 distinct
    assert (r.num_ngrams, r.c_context) == (21, 10)
    assert r.r_context == pytest.approx(10 / 21, abs=0)


def test_token_unit_counts_token_ids():
    tok = CODE.replace(unit="token")
    ids = list(range(10)) * 10
    assert score("no loop in the text", False, 100, 3000, tok, token_ids=ids).r_red == -0.6
    with pytest.raises(LieError, match="token_ids"):
        score("text", False, 4, 3000, tok)


# ---- R_len ------------------------------------------------------------------------------------


@pytest.mark.parametrize("extra", [0, 500, 1000])
def test_length_reward_at_ref_minus_tolerance(extra):
    cfg = CODE.replace(extra_tokens=extra)
    ref = 3000
    assert length_reward(False, ref - 500, ref, cfg) == 0.0
    assert length_reward(False, ref - 499, ref, cfg) == 0.0
    slope = 3.33e-5 * (1 + extra / ref)
    assert length_reward(False, ref - 501, ref, cfg) == pytest.approx(-slope, rel=1e-12)
    assert length_reward(False, 0, ref, cfg) == pytest.approx(-slope * 2500, rel=1e-12)
    assert length_reward(True, 0, ref, cfg) == 0.0
    assert length_reward(False, 0, ref, cfg.replace(length_term=False)) == 0.0


def test_length_reward_per_item_extra_tokens_overrides_config():
    assert length_reward(False, 0, 1000, CODE, extra_tokens=1000) == pytest.approx(-3.33e-5 * 2 * 500)


def test_paper_variant_target_is_ref_plus_delta():
    paper = CODE.replace(variant="paper", eta=0.3 / 9000, delta_l=100)
    assert length_reward(False, 3100, 3000, paper) == 0.0
    assert length_reward(False, 3099, 3000, paper) == pytest.approx(-0.3 / 9000)
    assert length_reward(False, 3000, 3000, paper.replace(extra_tokens=1000)) == pytest.approx(
        -100 * 0.3 / 9000
    )


def test_combined_reward_is_the_sum_of_its_terms():
    r = score(looped(10), False, 100, 3000, CODE.replace(extra_tokens=500))
    assert r.reward == r.r_acc + r.r_len + r.r_red
    assert r.r_acc == 0.0 and r.r_len < 0 and r.r_red == -0.6


def test_baseline_switches_leave_accuracy_only():
    base = CODE.replace(length_term=False, redundancy_term=False)
    for correct in (True, False):
        r = score(looped(20), correct, 0, None, base)
        assert r.reward == (1.0 if correct else 0.0)
        assert r.max_ngram_count == 20  # the metrics are still measured


# ---- configuration and input errors -----------------------------------------------------------


def test_config_from_strings_and_errors_naming_the_key():
    cfg = RewardConfig.from_mapping({"eta": "1e-5", "theta_inclusive": False, "n": "8", "unit": "token"})
    assert (cfg.eta, cfg.theta_inclusive, cfg.n, cfg.unit) == (1e-5, False, 8, "token")
    with pytest.raises(LieError, match="'theta_inclusive' must be bool"):  # booleans come parsed (YAML)
        RewardConfig.from_mapping({"theta_inclusive": "false"})
    with pytest.raises(LieError, match="unknown reward key.*thetta"):
        RewardConfig.from_mapping({"thetta": 3}, source="x.yaml")
    with pytest.raises(LieError, match="'n' must be int"):
        RewardConfig.from_mapping({"n": "ten"})
    with pytest.raises(LieError, match="'variant' must be one of"):
        RewardConfig(variant="papr")
    with pytest.raises(LieError, match="'theta' must be >= 1"):
        RewardConfig(theta=0)


@pytest.mark.parametrize(
    "args, message",
    [
        (("x", 1, 10, 100), "'correct' must be true or false"),
        (("x", False, -1, 100), "'num_tokens' must be an integer >= 0"),
        (("x", False, 10, 0), "'ref_len' must be an integer >= 1"),
        ((None, False, 10, 100), "'response' must be a string"),
    ],
)
def test_bad_inputs_are_named(args, message):
    with pytest.raises(LieError, match=message):
        score(*args)


def test_batch_errors_name_the_item():
    with pytest.raises(LieError, match="item 1: 'ref_len'"):
        score_batch(["a", "b"], [False, False], [1, 1], [100, -5])
    with pytest.raises(LieError, match="correct has 1 items"):
        score_batch(["a", "b"], [False], [1, 1], [100, 100])


# ---- properties ---------------------------------------------------------------------------------

TEXTS = st.lists(st.sampled_from(["a", "b", "c", "a_b", "x"]), max_size=200).map(" ".join)


@settings(max_examples=200, deadline=None)
@given(TEXTS, st.booleans(), st.integers(0, 12000), st.integers(1, 9192))
def test_state_metrics_stay_in_range(text, correct, length, ref):
    r = score(text, correct, length, ref)
    assert 0 < r.r_context <= 1.0
    if r.num_ngrams:
        assert r.c_context <= r.num_ngrams
    assert r.r_len <= 0.0 and r.r_red in (0.0, -0.6)


@settings(max_examples=200, deadline=None)
@given(TEXTS, TEXTS)
def test_more_repetition_never_lowers_the_max_count(text, more):
    before = score(text, False, 0, 100).max_ngram_count
    assert score(text + " " + text, False, 0, 100).max_ngram_count >= before
    assert score(text + " " + more, False, 0, 100).max_ngram_count >= before


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 12000), st.integers(0, 12000), st.integers(1, 9192), st.sampled_from([0, 500, 1000]))
def test_longer_wrong_answers_never_get_a_lower_length_reward(a, b, ref, extra):
    short, long = sorted((a, b))
    cfg = CODE.replace(extra_tokens=extra)
    assert length_reward(False, short, ref, cfg) <= length_reward(False, long, ref, cfg) <= 0.0
