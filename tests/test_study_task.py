"""The study's task (multi-step arithmetic): depth, values, determinism, shallow guesses, exact grading;
and the config checks of the supervised stage and the study section."""

from __future__ import annotations

import random

import pytest

from lie.errors import LieError
from lie.grading import grade_math
from lie.tasks import arithmetic as A


def test_a_problem_needs_its_depth_in_steps():
    p = A.Problem(7, (("+", 5), ("*", 2), ("-", 3)))
    assert p.depth == 3 and p.values() == [12, 24, 21] and p.answer == 21
    assert p.question() == "Start with 7. Add 5, then multiply by 2, then subtract 3. What number do you get?"
    # the smoke data's format, unchanged
    assert p.solution() == "7 + 5 = 12. 12 * 2 = 24. 24 - 3 = 21. The answer is \\boxed{21}."
    assert A.check(p.solution(), 21) and not A.check(p.solution(), 24)


@pytest.mark.parametrize("depth", [1, 3, 6])
def test_generated_problems_have_their_depth_and_values_in_range(depth):
    rng = random.Random(depth)
    for _ in range(200):
        p = A.make_problem(rng, depth)
        assert p.depth == depth and len(p.steps()) == depth
        assert all(0 <= v <= A.MAX_VALUE for v in [p.start, *p.values()])
        assert p.solution().count("=") == depth and A.boxed_answer(p.solution()) == p.answer


def test_generation_is_deterministic_for_a_seed():
    assert A.generate(50, 7, 2, 5) == A.generate(50, 7, 2, 5)
    assert A.generate(50, 7, 2, 5) != A.generate(50, 8, 2, 5)
    assert {p.depth for p in A.generate(200, 7, 2, 5)} == {2, 3, 4, 5}


def test_truncated_solutions_jump_to_the_running_value():
    p = A.Problem(7, (("+", 5), ("*", 2), ("-", 3)))
    assert A.truncated_solution(p, 0) == "The answer is \\boxed{7}."
    assert A.truncated_solution(p, 2) == "7 + 5 = 12. 12 * 2 = 24. The answer is \\boxed{24}."
    assert A.truncated_solution(p, 3) == p.solution()
    assert [A.guess(p, k) for k in range(4)] == [7, 12, 24, 21]
    with pytest.raises(ValueError, match="keep_steps"):
        A.guess(p, 4)


def test_a_shallow_guess_is_mostly_wrong_from_depth_3_and_the_full_solution_always_right():
    problems = A.generate(600, 3, 3, 6)
    rng = random.Random(0)
    guesses = [A.truncated_solution(p, rng.randrange(p.depth)) for p in problems]
    right = sum(A.check(g, p.answer) for g, p in zip(guesses, problems))
    assert right / len(problems) < 0.1  # only when the skipped operations cancel out
    assert all(A.check(p.solution(), p.answer) for p in problems)


def test_the_pipelines_math_grader_agrees_on_boxed_integers():
    """Training and evaluation grade with lie.grading's math path: boxed integers are exact there."""
    p = A.Problem(7, (("+", 5), ("*", 2), ("-", 3)))
    assert grade_math(p.solution(), "21").correct
    for keep in range(3):
        assert not grade_math(A.truncated_solution(p, keep), "21").correct
    # what the strict checker does not accept: an unboxed last number (a cut response)
    cut = "7 + 5 = 12. 12 * 2 = 24. 24 - 3 = 21"
    assert grade_math(cut, "21").correct and not A.check(cut, 21)


def test_stopping_after_each_step_gives_a_geometric_number_of_steps():
    rng = random.Random(0)
    keeps = [A.sampled_steps(8, rng, 0.35) for _ in range(20000)]
    for j in range(1, 6):
        share = sum(k >= j for k in keeps) / len(keeps)
        assert share == pytest.approx(0.65**j, abs=0.015)
    assert A.sampled_steps(5, rng, 0.0) == 5 and A.sampled_steps(5, rng, 1.0) == 0
    text, keep = A.sampled_solution(A.Problem(3, (("+", 1), ("+", 1))), random.Random(1), 0.0)
    assert keep == 2 and text.endswith("\\boxed{5}.")
    with pytest.raises(ValueError, match="stop_prob"):
        A.sampled_steps(3, rng, 1.5)


SFT = {"seed": 0, "problems": 10, "min_depth": 1, "max_depth": 3, "stop_prob": 0.3, "steps": 5,
       "batch_size": 4, "lr": 1e-3, "warmup_steps": 1}  # fmt: skip


@pytest.mark.parametrize(
    "change, message",
    [
        ({"steps": None}, "models.tiny.sft.steps must be an integer"),
        ({"stop_prob": 1.5}, r"models.tiny.sft.stop_prob must be in \[0, 1\]"),
        ({"max_depth": 0}, "models.tiny.sft.max_depth must be >= min_depth"),
        ({"lr": 0}, "models.tiny.sft.lr must be > 0"),
        ({"epochs": 3}, r"unknown key\(s\) \['epochs'\]"),
    ],
)
def test_a_bad_supervised_stage_key_is_named(change, message):
    from lie.sft import SFTSettings

    mapping = {**SFT, **change}
    with pytest.raises(LieError, match=message):
        SFTSettings.from_mapping(mapping, "models.tiny.sft")
    missing = {k: v for k, v in SFT.items() if k != "seed"}
    with pytest.raises(LieError, match=r"missing key\(s\) \['seed'\]"):
        SFTSettings.from_mapping(missing, "models.tiny.sft")


def test_the_study_config_is_valid_and_its_study_section_is_checked():
    from study_pipeline import study_config

    from lie.config import run_settings, validate_config
    from lie.study.spec import study_spec

    config = study_config()
    validate_config(config, "study.yaml")
    spec = study_spec(config)
    assert [a.name for a in spec.arms] == ["grpo", "grpo-len", "grpo-lie", "gspo", "gspo-lie"]
    assert all(len(a.runs) >= 3 for a in spec.arms)
    arm_of = {r: a.name for a in spec.arms for r in a.runs}
    expected = {"grpo": ("grpo", "off"), "grpo-len": ("grpo", "length-only"), "grpo-lie": ("grpo", "on"),
                "gspo": ("gspo", "off"), "gspo-lie": ("gspo", "on")}  # fmt: skip
    for run, arm in arm_of.items():
        assert (config["experiments"][run]["algorithm"], config["experiments"][run]["lie"]) == expected[arm]
    # same budget for every arm: the runs differ only in algorithm, LIE mode and seed
    settings = [run_settings(config, r) for r in spec.runs]
    for key in (
        "max_steps",
        "train_batch_size",
        "ppo_mini_batch_size",
        "rollout_n",
        "lr",
        "max_response_length",
    ):
        assert len({str(s[key]) for s in settings}) == 1, key
    for arm in spec.arms:
        assert sorted(run_settings(config, r)["seed"] for r in arm.runs) == [0, 1, 2]
    for change, message in [
        ({"bench": "nope"}, "study.bench 'nope' is not in evaluation.benchmarks"),
        ({"base_model": "nope"}, "study.base_model 'nope' is not in evaluation.base_models"),
        ({"arms": {"x": {"label": "X", "runs": ["nope"]}}}, "study.arms.x.runs names 'nope'"),
    ]:
        broken = {**config, "study": {**config["study"], **change}}
        with pytest.raises(LieError, match=message):
            study_spec(broken)
    with pytest.raises(LieError, match="key 'study': Additional properties"):
        validate_config({**config, "study": {**config["study"], "smooth": 3}}, "study.yaml")
    with pytest.raises(LieError, match="config has no study: section"):
        study_spec({k: v for k, v in config.items() if k != "study"})


def test_the_supervised_stage_is_for_tiny_models_only(tmp_path, capsys):
    from small import write_config
    from study_pipeline import study_config

    from lie.cli import main

    config = study_config()
    config["outdir"] = str(tmp_path / "out")
    config["models"]["tiny"]["tiny"] = None
    cfg = write_config(tmp_path / "c.yaml", config)
    assert main(["base-model", "--config", str(cfg), "--name", "tiny"]) == 2
    assert "models.tiny.sft: the supervised stage is for tiny models" in capsys.readouterr().err
    assert not (tmp_path / "out" / "base" / "tiny").exists()
