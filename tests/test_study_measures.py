"""The study's measures on hand-made inputs: the trap index (analytic and counted), paired differences
and the pre-registered verdicts, the gates, per-step curves of rollouts, per-response columns."""

from __future__ import annotations

import math
import random

import pytest

from lie.config import Config
from lie.core.errors import LieError
from lie.study import trap
from lie.study.paired import paired, verdict
from lie.tasks import arithmetic as A
from lie.tasks import chain as C


def test_the_analytic_trap_index_is_the_chance_that_a_group_agrees():
    # q = (1 - s)^k: stop 0.5 at depth 5 gives 1/32; 8 samples all wrong with (31/32)^8
    assert trap.solve_probability(0.5, 5) == 1 / 32
    assert trap.group_trap(1 / 32, 8) == pytest.approx((31 / 32) ** 8 + (1 / 32) ** 8)
    strong = trap.analytic_trap_index(0.5, (5, 7), 8)
    weak = trap.analytic_trap_index(0.35, (3, 5), 8)
    assert strong == pytest.approx(sum(trap.group_trap(0.5**k, 8) for k in (5, 6, 7)) / 3)
    assert 0.85 < strong < 0.9 and 0.2 < weak < 0.25
    # a step accuracy below 1 makes solutions rarer still
    assert trap.analytic_trap_index(0.5, (5, 7), 8, step_accuracy=0.9) > strong
    assert trap.analytic_full_share(0.5, (5, 7)) == pytest.approx((0.5**5 + 0.5**6 + 0.5**7) / 3)


def test_the_analytic_trap_index_matches_sampled_groups():
    rng = random.Random(0)
    groups = []
    for _ in range(20000):
        depth = rng.randint(5, 7)
        groups.append([all(rng.random() >= 0.5 for _ in range(depth)) for _ in range(8)])
    assert trap.trap_index(groups) == pytest.approx(trap.analytic_trap_index(0.5, (5, 7), 8), abs=0.01)
    assert trap.trap_index([[True, True], [False, True], [False, False]]) == pytest.approx(2 / 3)
    assert math.isnan(trap.trap_index([]))


def test_paired_differences_pair_by_seed_and_give_a_t_interval():
    p = paired({0: 0.3, 1: 0.5, 2: 0.4, 3: 0.6, 9: 1.0}, {0: 0.2, 1: 0.3, 2: 0.1, 3: 0.2})
    assert p.seeds == (0, 1, 2, 3) and p.diffs == pytest.approx((0.1, 0.2, 0.3, 0.4))
    assert p.mean == pytest.approx(0.25) and p.positive == 4
    sd = math.sqrt(sum((d - 0.25) ** 2 for d in (0.1, 0.2, 0.3, 0.4)) / 3)
    assert p.half_width == pytest.approx(3.182 * sd / 2)
    assert paired({0: 1.0}, {0: 0.5}).half_width is None


@pytest.mark.parametrize(
    "diffs, prediction, expected",
    [
        ((0.1, 0.2, 0.15, 0.12), "positive", "supported"),  # 4 of 4, interval above zero
        ((0.1, 0.2, 0.05, -0.01), "positive", "rule met; no evidence of an effect"),  # interval holds 0
        ((0.151, -0.033, 0.014, 0.033), "positive", "rule met; no evidence of an effect"),  # study 1
        ((0.1, 0.2, -0.05, -0.01), "positive", "not supported"),  # 2 of 4
        ((0.01, 0.01, 0.01, -0.2), "positive", "not supported"),  # 3 of 4 but the mean is negative
        ((0.02, -0.03, 0.04), "zero", "as predicted"),
        ((0.1, 0.06, 0.08), "zero", "not as predicted"),
    ],
)
def test_the_verdict_follows_the_registered_rule(diffs, prediction, expected):
    p = paired(dict(enumerate(diffs)), dict.fromkeys(range(len(diffs)), 0.0))
    assert verdict(p, prediction, min_positive=3, zero_margin=0.05) == expected


def _row(index, sample, depth, written, right, correct, **extra):
    return {"bench": "b", "index": index, "sample": sample, "depth_needed": depth, "depth_written": written,
            "depth_reached": right, "steps_right": right, "repeats": 0, "boxed": 1, "strict": correct,
            "num_tokens": 10, "tokens_needed": 30, "finish_reason": "stop", "c_context": 5, "r_context": 1.0,
            "loop": False, "correct": {"64": correct, "96": correct}, **extra}  # fmt: skip


def _config(trap_index=(0.5, 1.0)):
    """The first registration's config: its strong condition reads depths 5-7 from one supervised model."""
    from study_pipeline import STUDY_V1, study_config

    config = study_config(STUDY_V1)
    config["study"]["conditions"]["strong"]["trap_index"] = list(trap_index)
    return config


def test_the_gates_are_measured_on_the_conditions_depths():
    from lie.study.gates import failures, measure
    from lie.study.spec import study_spec

    config = _config()
    spec = study_spec(Config.of(config))
    strong = spec.conditions[0]
    rows = []
    for i in range(30):  # depth 5, 8 samples each: one problem in three has one full, right sample
        for s in range(8):
            full = s == 0 and i % 3 == 0
            rows.append(_row(i, s, 5, 5 if full else 1, 5 if full else 1, full))
    rows += [_row(100, s, 3, 3, 3, True) for s in range(8)]  # depth 3: not in the strong condition
    result = measure(Config.of(config), spec, strong, rows)
    assert (result.problems, result.samples) == (30, 240)
    assert result.trap_index == pytest.approx(20 / 30)  # 10 problems hold a right sample
    assert result.full_depth_samples == 18 and result.full_depth_accuracy == 1.0  # every depth counts here
    assert result.step_accuracy == 1.0 and result.step_gate and result.trap_gate
    assert not result.full_depth_gate  # 18 samples < the 20 required
    assert failures([result]) == ["strong: accuracy given full depth 1.0 (n = 18)"]
    assert result.trap_analytic == pytest.approx(trap.analytic_trap_index(0.5, (5, 7), 8))
    strict = study_spec(Config.of(_config((0.9, 1.0))))
    assert not measure(Config.of(config), strict, strict.conditions[0], rows).trap_gate
    with pytest.raises(LieError, match="no probe responses of depth"):
        measure(Config.of(config), spec, strong, rows[-8:])


def test_a_training_step_counts_its_trap_index_and_looping():
    from lie.study.inputs import step_point
    from lie.study.responses import loop_config

    reward = loop_config(Config.of(_config()))
    records = []
    for group, accs in (("1-0", [0, 0, 0, 0]), ("1-1", [1, 0, 0, 0]), ("1-2", [1, 1, 1, 1])):
        for acc in accs:
            records.append({"step": 1, "group": group, "acc": float(acc), "num_tokens": 20, "c_context": 10,
                            "r_context": 1.0, "max_ngram_count": 3 if group == "1-0" else 1, "r_len": 0.0,
                            "r_red": -0.6 if group == "1-0" else 0.0, "reward": acc - 0.6 * (group == "1-0"),
                            "response": "x"})  # fmt: skip
    point = step_point(1, records, reward)
    assert point.groups == 3 and point.trap_index == pytest.approx(2 / 3)
    assert point.zero_adv_share == pytest.approx(2 / 3)
    assert point.accuracy == pytest.approx(5 / 12) and point.loop_share == pytest.approx(4 / 12)
    assert point.red_applied == pytest.approx(4 / 12) and point.len_applied == 0.0


def test_a_length_term_gives_an_all_wrong_group_an_advantage_the_trap_index_does_not_see():
    from lie.study.inputs import step_point
    from lie.study.report import escape_step
    from lie.study.responses import loop_config

    reward = loop_config(Config.of(_config()))

    def sample(step, group, acc, r_len):
        return {"step": step, "group": group, "acc": float(acc), "num_tokens": 20, "c_context": 10,
                "r_context": 1.0, "max_ngram_count": 1, "r_len": r_len, "r_red": 0.0,
                "reward": acc + r_len, "response": "x"}  # fmt: skip

    # step 1: both groups all wrong, but R_len differs inside group "a" (a shorter wrong answer pays more)
    first = [sample(1, "a", 0, -0.1), sample(1, "a", 0, -0.3), sample(1, "b", 0, 0.0), sample(1, "b", 0, 0.0)]
    point = step_point(1, first, reward)
    assert point.trap_index == 1.0 and point.zero_adv_share == 0.5
    assert point.len_applied == pytest.approx(0.5)
    # step 2: one group mixed; step 3: both mixed. The trap index falls below 0.6 first at step 3.
    second = [sample(2, "a", 1, 0.0), sample(2, "a", 0, 0.0), sample(2, "b", 0, 0.0), sample(2, "b", 0, 0.0)]
    third = [sample(3, "a", 1, 0.0), sample(3, "a", 0, 0.0), sample(3, "b", 0, 0.0), sample(3, "b", 1, 0.0)]
    points = [step_point(s, r, reward) for s, r in ((1, first), (2, second), (3, third))]
    assert [p.trap_index for p in points] == [1.0, 0.5, 0.0]
    assert escape_step(points) == 2
    assert escape_step(points[:1]) is None


def test_a_response_row_reads_depth_states_and_copies_grades():
    from lie.study.responses import loop_config, response_row

    reward = loop_config(Config.of(_config()))
    p = A.Problem(7, (("+", 5), ("*", 2), ("-", 3)))
    looped = A.written_solution(p, 1, repeats=3)
    ids = list(range(40))  # token ids: a 6-gram state repeats only where the ids repeat
    loop_ids = [1, 2, 3, 4, 5, 6] * 4 + [9, 9]
    for text, token_ids, loops in ((p.solution(), ids, False), (looped, loop_ids, True)):
        obj = {
            "bench": "b",
            "index": 0,
            "sample": 1,
            "text": text,
            "token_ids": token_ids,
            "finish_reason": "stop",
        }
        row = response_row(obj, p, C, {"64": True}, 33, reward)
        assert row["loop"] is loops and row["correct"] == {"64": True}  # copied, not re-graded
        assert row["tokens_needed"] == 33 and row["num_tokens"] == len(token_ids)
    assert row["depth_written"] == 1 and row["repeats"] == 3 and row["strict"] is False


def test_the_probe_samples_with_the_rollouts_settings_and_refuses_a_config_without_them():
    """``lie study-probe`` samples as the RL rollouts do: the study's runs' temperature, top_p and limit
    (their settings); a training section without one of them is one line naming the key; runs that
    disagree on the limit are refused."""
    from study_pipeline import study_config

    from lie.study.stages.probe import rollout_sampling

    config = study_config()
    training = config["training"]
    assert rollout_sampling(Config.of(config)) == (
        training["temperature"],
        training["top_p"],
        training["max_response_length"],
    )
    del config["training"]["top_p"]
    with pytest.raises(LieError, match="key 'training.top_p' is missing"):
        rollout_sampling(Config.of(config))
    config = study_config()
    config["experiments"]["v2_strong_grpo_m0_s1"]["max_response_length"] = 32  # one run of another limit
    with pytest.raises(LieError, match=r"study: the runs must share one max_response_length, got \[32, 64\]"):
        rollout_sampling(Config.of(config))
