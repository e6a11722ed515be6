"""The second registration's statistics (lie.study.stats, lie.study.registered) against hand-computed
values and printed tables of Student's t; the `study.tests` section and its errors."""

from __future__ import annotations

import copy
import math

import pytest
import yaml
from small import REPO

from lie.config import Config
from lie.core.errors import LieError
from lie.study import registered, stats
from lie.study.registered import Persistence, persistence, registered_rows
from lie.study.spec import RegisteredTests, study_spec


def _closed_form_df2(t: float) -> float:
    """P(T > t) with 2 degrees of freedom: 1/2 - t / (2 sqrt(t^2 + 2))."""
    return 0.5 - t / (2 * math.sqrt(t * t + 2))


@pytest.mark.parametrize(
    "t, df, p",
    [
        (1.0, 1, 0.25),  # Cauchy: atan(1) / pi
        (6.314, 1, 0.05),  # printed one-sided 5% points
        (2.920, 2, 0.05),
        (2.353, 3, 0.05),
        (1.833, 9, 0.05),
        (1.796, 11, 0.05),
        (2.262, 9, 0.025),
        (1.697, 30, 0.05),
        (0.876, 11, 0.2),
        (0.0, 7, 0.5),
    ],
)
def test_the_t_tail_matches_the_printed_tables(t, df, p):
    assert stats.t_sf(t, df) == pytest.approx(p, abs=2e-4)
    assert stats.t_sf(-t, df) == pytest.approx(1 - p, abs=2e-4)


def test_the_t_tail_matches_the_closed_forms():
    for t in (0.3, 1.0, 2.5, 7.0):
        assert stats.t_sf(t, 2) == pytest.approx(_closed_form_df2(t), rel=1e-12)
        assert stats.t_sf(t, 1) == pytest.approx(0.5 - math.atan(t) / math.pi, rel=1e-12)
    # many degrees of freedom: the normal tail
    assert stats.t_sf(1.6448536, 2000) == pytest.approx(0.05, abs=3e-4)
    assert stats.t_quantile(0.95, 11) == pytest.approx(1.796, abs=1e-3)
    assert stats.t_quantile(0.8, 11) == pytest.approx(0.876, abs=1e-3)
    assert stats.t_quantile(0.975, 30) == pytest.approx(2.042, abs=1e-3)
    with pytest.raises(ValueError):
        stats.t_sf(1.0, 0)


def test_the_paired_test_by_hand():
    # diffs 0.1, 0.2, 0.3: mean 0.2, SD 0.1, SE 0.1 / sqrt(3), t = 2 sqrt(3), 2 df
    test = stats.paired_test([0.1, 0.2, 0.3])
    assert (test.estimate, test.df, test.n) == (pytest.approx(0.2), 2, 3)
    assert test.se == pytest.approx(0.1 / math.sqrt(3))
    assert test.t == pytest.approx(2 * math.sqrt(3))
    assert test.p == pytest.approx(_closed_form_df2(2 * math.sqrt(3)))  # 0.0371
    assert test.p == pytest.approx(0.0371, abs=1e-4)
    assert stats.paired_test([0.1]) is None and stats.paired_test([0.1, 0.1]) is None
    # a negative mean: p above one half
    assert stats.paired_test([-0.1, -0.3, 0.0]).p > 0.5


def test_the_smallest_detectable_effect():
    # (t[0.95, 11] + t[0.8, 11]) * SD / sqrt(12) = (1.796 + 0.876) * 0.078 / sqrt(12)
    assert stats.detectable_effect(0.078, 12) == pytest.approx(2.672 * 0.078 / math.sqrt(12), abs=2e-4)
    assert stats.detectable_effect(0.078, 12) == pytest.approx(0.060, abs=5e-4)
    assert stats.detectable_effect(0.078, 30) < stats.detectable_effect(0.078, 12)


def test_the_interaction_is_a_welch_test_by_hand():
    strong, weak = [0.3, 0.1, 0.2], [0.0, 0.1]
    # variances of the means: 0.01 / 3 and 0.005 / 2; Welch df = (v1 + v2)^2 / (v1^2 / 2 + v2^2 / 1)
    v1, v2 = 0.01 / 3, 0.005 / 2
    df = (v1 + v2) ** 2 / (v1**2 / 2 + v2**2 / 1)
    test = stats.interaction(strong, weak)
    assert test.estimate == pytest.approx(0.2 - 0.05)
    assert test.se == pytest.approx(math.sqrt(v1 + v2))
    assert test.df == math.floor(df) == 2
    assert test.p == pytest.approx(_closed_form_df2(0.15 / math.sqrt(v1 + v2)))
    assert stats.interaction([0.1], weak) is None


def test_the_slope_by_hand():
    # x 0..3, y 0, 1, 1, 3: slope 4.5 / 5 = 0.9, residual sum of squares 0.70, SE sqrt(0.70 / 2 / 5)
    test = stats.slope([0, 1, 2, 3], [0, 1, 1, 3])
    assert test.estimate == pytest.approx(0.9)
    assert test.se == pytest.approx(math.sqrt(0.07))
    assert test.df == 2 and test.p == pytest.approx(_closed_form_df2(0.9 / math.sqrt(0.07)))
    assert stats.slope([1, 1, 1], [0, 1, 2]) is None
    with pytest.raises(ValueError):
        stats.slope([1, 2], [1])


TESTS = RegisteredTests(alpha=0.05, power=0.8, strong="strong", weak="weak",
              strength={"weak": 0.47, "mid": 0.776, "strong": 0.91}, persistence_steps=20,
              persistence_threshold=0.6)  # fmt: skip
HELD = Persistence(steps=20, threshold=0.6, lowest=0.617, lowest_step=19, runs=12)
FAILED = Persistence(steps=20, threshold=0.6, lowest=0.553, lowest_step=17, runs=30)
VERDICTS = ("supported", "not supported")


def test_the_registered_rows_read_every_level():
    effects = {"weak": [0.0, 0.1, -0.05, 0.02], "mid": [0.1, 0.05], "strong": [0.2, 0.1, 0.15, 0.3, 0.12]}
    rows = {r["test"]: r for r in registered_rows(effects, TESTS, HELD)}
    assert list(rows) == ["effect:weak", "effect:mid", "primary", "interaction", "slope"]
    primary = stats.paired_test(effects["strong"])
    assert rows["primary"]["p"] == pytest.approx(primary.p) and rows["primary"]["n"] == 5
    assert rows["primary"]["verdict"] == "supported"  # p ~ 0.003
    assert rows["primary"]["detectable"] == pytest.approx(
        stats.detectable_effect(primary.se * math.sqrt(5), 5)
    )
    assert rows["interaction"]["estimate"] == pytest.approx(0.174 - 0.0175)
    slope = stats.slope(
        [0.47] * 4 + [0.776] * 2 + [0.91] * 5, effects["weak"] + effects["mid"] + effects["strong"]
    )
    assert rows["slope"]["estimate"] == pytest.approx(slope.estimate) and rows["slope"]["n"] == 11
    assert rows["effect:weak"]["p"] == pytest.approx(stats.paired_test(effects["weak"]).p)
    few = {r["test"]: r["verdict"] for r in registered_rows({"weak": [0.1], "strong": [0.1]}, TESTS, HELD)}
    assert few["primary"] == "no result (too few pairs, or no spread)"
    assert (
        few["interaction"]
        == few["slope"]
        == "no verdict: underpowered at this look (decided by make study-full)"
    )
    equal = {
        r["test"]: r for r in registered_rows({"weak": [-0.033, -0.033], "strong": [0.1, 0.2]}, TESTS, HELD)
    }
    assert equal["effect:weak"]["sd"] == 0 and equal["effect:weak"]["detectable"] is None  # "—", not 0.000


# make study's shapes (docs/study.md): 12 strong pairs, 1 mid, 2 weak pairs whose differences are equal
STRONG_12 = [0.259, -0.216, 0.10, 0.05, -0.02, 0.15, 0.20, -0.10, 0.08, 0.12, -0.05, 0.00]
MAKE_STUDY_EFFECTS = {"weak": [-0.033, -0.033], "mid": [0.02], "strong": STRONG_12}


def test_welch_with_a_level_without_spread_gives_no_result():
    # the weak level's 2 pairs have SD 0: a Welch test would rest on the strong level's variance alone
    assert stats.interaction(STRONG_12, [-0.033, -0.033]) is None
    assert stats.interaction([0.1, 0.1, 0.1], [0.0, 0.2]) is None
    assert stats.interaction(STRONG_12, [-0.033, -0.03]) is not None  # any spread: a result
    rows = {r["test"]: r for r in registered_rows(MAKE_STUDY_EFFECTS, TESTS, HELD)}
    assert rows["interaction"]["p"] is None and rows["interaction"]["verdict"] not in VERDICTS


def test_make_study_states_no_verdict_the_registration_withholds():
    # the registration: interaction and slope are decided by make study-full (30 / 15 / 15 pairs); make
    # study's are "reported as underpowered, not as a verdict"; the weak and mid levels alone are no
    # registered test at any look
    spread = {**MAKE_STUDY_EFFECTS, "weak": [-0.10, -0.14]}  # a weak level with spread: the Welch test runs
    rows = {r["test"]: r for r in registered_rows(spread, TESTS, HELD)}
    assert rows["interaction"]["p"] is not None and rows["interaction"]["p"] < 0.05  # computed, printed...
    assert rows["slope"]["p"] is not None
    for test in ("interaction", "slope"):  # ... but no verdict
        assert rows[test]["verdict"] == "no verdict: underpowered at this look (decided by make study-full)"
    for test in ("effect:weak", "effect:mid"):
        assert rows[test]["verdict"] == "no verdict: not a registered test"
    assert rows["primary"]["verdict"] in VERDICTS
    table = registered.tests_markdown(list(rows.values()), HELD)
    for test in ("interaction", "slope", "effect:weak", "effect:mid"):
        (line,) = [x for x in table if x.startswith(f"| {test} |")]
        assert line.endswith(
            "| **no verdict: underpowered at this look (decided by make study-full)** |"
        ) or (line.endswith("| **no verdict: not a registered test** |")), line
    # at make study-full's size the interaction and the slope get their verdicts; the weak and mid rows none
    full = {"weak": [-0.12 + 0.02 * (i % 3 - 1) for i in range(15)], "mid": [0.0 + 0.02 * (i % 3 - 1) for i in range(15)],
            "strong": [s + 0.02 for s in STRONG_12] * 2 + STRONG_12[:6]}  # fmt: skip
    verdicts = {r["test"]: r["verdict"] for r in registered_rows(full, TESTS, HELD)}
    assert verdicts["interaction"] == "supported" and verdicts["slope"] in VERDICTS
    assert verdicts["effect:weak"] == verdicts["effect:mid"] == "no verdict: not a registered test"
    # one pair short in a level: still make study's reading
    short = {**full, "mid": full["mid"][:14]}
    assert {r["test"]: r["verdict"] for r in registered_rows(short, TESTS, HELD)}["interaction"].startswith(
        "no "
    )


def test_a_failed_persistence_check_puts_its_words_on_every_verdict():
    # make study-full: 30 / 15 / 15 pairs, GRPO's trap index fell to 0.553 < 0.6 at step 17
    effects = {"weak": [0.017 + 0.01 * (i % 3 - 1) for i in range(15)],
               "mid": [-0.045 + 0.02 * (i % 5 - 2) for i in range(15)],
               "strong": [0.027 + 0.1 * ((i % 7) - 3) / 3 for i in range(30)]}  # fmt: skip
    rows = registered_rows(effects, TESTS, FAILED)
    verdicts = [r["verdict"] for r in rows if not r["verdict"].startswith("no ")]
    assert len(verdicts) == 3  # primary, interaction, slope
    assert all(v.endswith("; the trap did not persist") for v in verdicts), verdicts
    assert all(v.split(";")[0] in VERDICTS for v in verdicts)
    # a check that holds adds nothing; a check with no step to read does not hold
    assert all("persist" not in r["verdict"] for r in registered_rows(effects, TESTS, HELD))
    empty = persistence([], 20, 0.6)
    assert all(
        r["verdict"].endswith("the trap did not persist")
        for r in registered_rows(effects, TESTS, empty)
        if not r["verdict"].startswith("no ")
    )
    table = "\n".join(registered.tests_markdown(rows, FAILED))
    assert "0.553 (step 17), threshold 0.6: **fails**" in table
    assert table.count("the trap did not persist") >= 3


def test_the_persistence_check_reads_the_running_mean_through_the_registered_step():
    trapped = {s: 0.9 for s in range(1, 41)}
    escaping = {s: (0.9 if s <= 10 else 0.3) for s in range(1, 41)}
    held = persistence([trapped, trapped], 20, 0.6)
    assert held.holds and held.lowest == pytest.approx(0.9) and held.runs == 2
    # mean over the two runs is 0.6 from step 11: the 5-step running mean reaches it at step 15
    mixed = persistence([trapped, escaping], 20, 0.6)
    assert mixed.lowest == pytest.approx(0.6) and mixed.holds
    check = persistence([escaping, escaping], 20, 0.6)
    assert not check.holds and check.lowest == pytest.approx(0.3) and check.lowest_step == 15
    # steps after the registered one do not count
    late = {s: (0.9 if s <= 20 else 0.0) for s in range(1, 41)}
    assert persistence([late], 20, 0.6).holds
    assert not persistence([], 20, 0.6).holds


def _v2() -> dict:
    return yaml.safe_load((REPO / "workflow" / "configs" / "study.yaml").read_text(encoding="utf-8"))


def test_the_second_registration_is_in_the_config_and_checked():
    config = _v2()
    spec = study_spec(Config.of(config))
    assert spec.tests is not None and spec.tests.alpha == 0.05 and spec.tests.persistence_steps == 20
    assert [c.name for c in spec.conditions] == ["weak", "mid", "strong"]
    strong = next(c for c in spec.conditions if c.name == "strong")
    pairs = {
        (config["experiments"][r]["model"], config["experiments"][r]["seed"]) for r in strong.arm("grpo").runs
    }
    assert len(pairs) >= 12 and len(strong.base_models) >= 2
    assert config["reflen"]["offset"] == 40
    from lie.study import trap

    for c in spec.conditions:  # the slope's x is the analytic trap index of the level (stop 0.5)
        assert spec.tests.strength[c.name] == pytest.approx(
            trap.analytic_trap_index(0.5, c.depths, 8), abs=5e-4
        )
    bad = copy.deepcopy(config)
    del bad["study"]["tests"]["strength"]["mid"]
    with pytest.raises(LieError, match=r"study.tests.strength must give every condition"):
        study_spec(Config.of(bad))
    bad = copy.deepcopy(config)
    bad["study"]["tests"]["strong"] = "strongest"
    with pytest.raises(LieError, match=r"study.tests.strong 'strongest' is not one of study.conditions"):
        study_spec(Config.of(bad))
    bad = copy.deepcopy(config)
    bad["study"]["conditions"]["weak"]["base_model"] = "tiny-m0"
    with pytest.raises(LieError, match=r"study.conditions.weak needs base_model .* or base_models"):
        study_spec(Config.of(bad))


def test_study_full_only_adds_runs():
    from snakemake.utils import update_config

    study = _v2()
    full = copy.deepcopy(study)
    update_config(full, yaml.safe_load((REPO / "workflow" / "configs" / "study-full.yaml").read_text()))
    assert all(full["experiments"][run] == spec for run, spec in study["experiments"].items())
    assert all(full["models"][m] == spec for m, spec in study["models"].items())
    for name, condition in study["study"]["conditions"].items():
        for arm, spec in condition["arms"].items():
            assert set(spec["runs"]) <= set(full["study"]["conditions"][name]["arms"][arm]["runs"])
    everything = {k: v for k, v in full.items() if k not in ("models", "experiments", "evaluation", "study")}
    assert everything == {
        k: v for k, v in study.items() if k not in ("models", "experiments", "evaluation", "study")
    }
    spec = study_spec(Config.of(full))
    strong = next(c for c in spec.conditions if c.name == "strong")
    assert len(strong.arm("grpo-lie").runs) >= 30


def test_pairs_of_another_machine_are_pooled_as_further_pairs(tmp_path):
    from lie.study.registered import pool, read_curves, read_effects

    header = "condition,comparison,measure,seeds,diffs,mean,registered\n"
    here, there = tmp_path / "here.csv", tmp_path / "there.csv"
    here.write_text(header + "strong,grpo-lie - grpo,acc_limit,m0/s0 m0/s1,0.1000 0.2000,0.15,primary\n"
                    "strong,grpo-lie - grpo,depth_reached,m0/s0 m0/s1,1.0 2.0,1.5,\n"
                    "weak,grpo-lie - grpo,acc_limit,m0/s0,0.0500,0.05,primary\n")  # fmt: skip
    there.write_text(header + "strong,grpo-lie - grpo,acc_limit,m0/s0,0.3000,0.3,primary\n"
                     "weak,grpo-lie - grpo,acc_limit,m0/s0,-0.0500,-0.05,primary\n")  # fmt: skip
    assert read_effects(here) == {"strong": [0.1, 0.2], "weak": [0.05]}
    pooled = pool(read_effects(here), read_effects(there))
    assert pooled == {"strong": [0.1, 0.2, 0.3], "weak": [0.05, -0.05]}
    rows = {r["test"]: r for r in registered_rows(pooled, TESTS, HELD)}
    assert rows["primary"]["n"] == 3 and rows["primary"]["p"] == pytest.approx(
        stats.paired_test([0.1, 0.2, 0.3]).p
    )
    assert rows["interaction"]["estimate"] == pytest.approx(0.2 - 0.0)
    # the pool's persistence check reads every machine's GRPO runs of the strong level
    steps = tmp_path / "study_steps.csv"
    steps.write_text("condition,arm,run,seed,step,trap_index\n"
                     "strong,grpo,r0,m0/s0,1,0.9\nstrong,grpo,r0,m0/s0,2,0.5\nstrong,grpo,r1,m0/s1,1,0.7\n"
                     "strong,grpo,r1,m0/s1,2,0.3\nstrong,grpo-lie,r2,m0/s0,1,0.1\nweak,grpo,r3,m0/s0,1,0.0\n")  # fmt: skip
    assert read_curves(steps, "strong", "grpo") == [{1: 0.9, 2: 0.5}, {1: 0.7, 2: 0.3}]
    with pytest.raises(LieError, match=r"no step of arm 'grpo' in condition 'mid'"):
        read_curves(steps, "mid", "grpo")
    bad = tmp_path / "bad.csv"
    bad.write_text(header + "strong,x,acc_limit,m0/s0,zero,0,primary\n")
    with pytest.raises(LieError, match=r"bad.csv line 2: 'diffs' must be numbers"):
        read_effects(bad)
    with pytest.raises(LieError, match=r"no row with registered = primary"):
        read_effects(_empty(tmp_path))
    with pytest.raises(LieError, match=r"cannot read .*missing.csv"):
        read_effects(tmp_path / "missing.csv")


def _empty(tmp_path):
    path = tmp_path / "empty.csv"
    path.write_text("condition,registered,diffs\nstrong,,0.1\n")
    return path
