"""The study's task (arithmetic chains: an early answer is wrong by construction), the arithmetic task
it is drawn from, shallow and padded examples, reading responses back (depth), and the config checks
of the supervised stage and the study section."""

from __future__ import annotations

import random

import pytest

from lie.config import Config
from lie.core.errors import LieError
from lie.grading import grade_math
from lie.tasks import arithmetic as A
from lie.tasks import chain as C
from lie.tasks import pointer as P
from lie.tasks import shallow, task_module

EXAMPLE = A.Problem(7, (("+", 5), ("*", 2), ("-", 3)))


def test_a_problem_needs_its_depth_in_steps():
    p = EXAMPLE
    assert p.depth == 3 and p.values() == [12, 24, 21] and p.answer == 21
    assert p.question() == "Start with 7. Add 5, then multiply by 2, then subtract 3. What number do you get?"
    # the smoke data's format, unchanged
    assert p.solution() == "7 + 5 = 12. 12 * 2 = 24. 24 - 3 = 21. The answer is \\boxed{21}."
    assert A.check(p.solution(), 21) and not A.check(p.solution(), 24)


@pytest.mark.parametrize("depth", [1, 3, 7])
def test_generated_problems_have_their_depth_and_values_in_range(depth):
    rng = random.Random(depth)
    for _ in range(200):
        p = C.make_distinct_problem(rng, depth)
        assert p.depth == depth and len(p.steps()) == depth
        assert all(0 <= v <= A.MAX_VALUE for v in [p.start, *p.values()])
        assert p.solution().count("=") == depth and A.boxed_answer(p.solution()) == p.answer


def test_generation_is_deterministic_for_a_seed():
    for task in (A, C, P):
        assert task.generate(50, 7, 2, 5) == task.generate(50, 7, 2, 5)
        assert task.generate(50, 7, 2, 5) != task.generate(50, 8, 2, 5)
        assert {p.depth for p in task.generate(200, 7, 2, 5)} == {2, 3, 4, 5}
    assert task_module("chain") is C
    with pytest.raises(LieError, match="unknown synthetic task 'nope'"):
        task_module("nope")


def test_an_early_answer_is_wrong_by_construction_in_a_chain_and_only_mostly_in_plain_arithmetic():
    """Stop after j < k steps and box the value reached: never right in the chain task."""
    chains, plain = C.generate(3000, 3, 1, 7), A.generate(3000, 3, 1, 7)
    for p in chains:
        assert all(not A.check(A.written_solution(p, j), p.answer) for j in range(p.depth))
        assert A.check(p.solution(), p.answer)
    lucky = sum(A.check(A.written_solution(p, j), p.answer) for p in plain for j in range(p.depth))
    assert lucky > 0  # what the chain task rules out: skipped operations that cancel


def test_chains_are_the_arithmetic_problems_that_have_a_distinct_answer():
    rng = random.Random(5)
    plain = [A.make_problem(rng, 4) for _ in range(500)]
    kept = [p for p in plain if C.distinct(p)]
    assert 0 < len(kept) < len(plain)
    assert not C.distinct(A.Problem(5, (("+", 2), ("-", 2))))  # back to the start
    assert not C.distinct(A.Problem(4, (("*", 2), ("+", 1), ("-", 1))))  # back to a value on the way


def test_the_pipelines_math_grader_agrees_on_boxed_integers():
    """Training and evaluation grade with lie.grading's math path: boxed integers are exact there."""
    p = EXAMPLE
    assert grade_math(p.solution(), "21").correct
    for keep in range(3):
        assert not grade_math(A.truncated_solution(p, keep), "21").correct
    # what the strict checker does not accept: an unboxed last number (a cut response)
    cut = "7 + 5 = 12. 12 * 2 = 24. 24 - 3 = 21"
    assert grade_math(cut, "21").correct and not A.check(cut, 21)


def test_a_chain_question_is_read_back_from_its_text():
    for p in C.generate(300, 9, 1, 7):
        prompt = f"{p.question()} Let's think step by step and output the final answer within \\boxed{{}}."
        assert C.parse_question(prompt) == p
    with pytest.raises(ValueError, match="no arithmetic-chain question"):
        C.parse_question("What is 2 + 2?")
    with pytest.raises(ValueError, match="bad operation 'divide by 2'"):
        C.parse_question("Start with 4. Add 1, then divide by 2. What number do you get?")


def test_trace_counts_steps_written_reached_right_and_repeated():
    p = EXAMPLE
    full = C.trace(p, p.solution())
    assert (full.depth_needed, full.depth_written, full.depth_reached, full.steps_right, full.repeats) == (
        3,
        3,
        3,
        3,
        0,
    )
    assert full.boxed == 21
    padded = C.trace(p, A.written_solution(p, 1, repeats=3))
    assert (padded.depth_written, padded.depth_reached, padded.steps_right, padded.repeats, padded.boxed) == (
        1,
        1,
        1,
        3,
        12,
    )
    # a wrong second step breaks the path; the third applies its operation right to the wrong value
    slip = C.trace(p, "7 + 5 = 12. 12 * 2 = 25. 25 - 3 = 22. The answer is \\boxed{22}.")
    assert (slip.depth_written, slip.depth_reached, slip.steps_right) == (3, 1, 2)
    # a step with the wrong operation (skipping one) is wrong, and so is a step beyond the depth
    skip = C.trace(p, "7 + 5 = 12. 12 - 3 = 9. 9 + 1 = 10.")
    assert (skip.depth_written, skip.depth_reached, skip.steps_right, skip.boxed) == (3, 1, 1, None)
    assert C.trace(p, "The answer is \\boxed{7}.") == C.Trace(3, 0, 0, 0, 0, 7)


def test_pointer_problems_visit_distinct_nodes_and_read_back():
    for p in P.generate(200, 4, 1, 7):
        nodes = [p.start, *p.values()]
        assert len(set(nodes)) == len(nodes) and len(p.pointers) == P.TABLE_SIZE
        assert P.parse_question(p.question()) == p
        assert all(not P.check(P.written_solution(p, j), p.answer) for j in range(p.depth))
        assert P.trace(p, p.solution()).depth_reached == p.depth
    with pytest.raises(ValueError, match="depth must be in 1..7"):
        P.make_problem(random.Random(0), P.TABLE_SIZE)


def test_stopping_after_each_step_gives_a_geometric_number_of_steps():
    rng = random.Random(0)
    keeps = [shallow.sampled_steps(8, rng, 0.35) for _ in range(20000)]
    for j in range(1, 6):
        share = sum(k >= j for k in keeps) / len(keeps)
        assert share == pytest.approx(0.65**j, abs=0.015)
    assert shallow.sampled_steps(5, rng, 0.0) == 5 and shallow.sampled_steps(5, rng, 1.0) == 0
    with pytest.raises(ValueError, match="stop_prob"):
        shallow.sampled_steps(3, rng, 1.5)


def test_a_share_of_the_examples_with_a_step_pad_it():
    rng = random.Random(2)
    problem = C.generate(1, 1, 6, 6)[0]
    examples = [shallow.shallow_example(C, problem, rng, 0.5, 0.2, 3) for _ in range(20000)]
    with_step = [e for e in examples if e.keep]
    padded = [e for e in with_step if e.repeats]
    assert len(padded) / len(with_step) == pytest.approx(0.2, abs=0.015)
    assert all(e.repeats == 0 for e in examples if not e.keep)  # nothing to repeat
    for e in padded[:50]:
        t = C.trace(problem, e.text)
        assert (t.depth_written, t.repeats) == (e.keep, 3)
        assert C.check(e.text, problem.answer) == (e.keep == problem.depth)  # padding adds no depth
    full = shallow.shallow_example(C, problem, rng, 0.0, 0.0, 3)
    assert full.text == problem.solution() and full.keep == problem.depth


SFT = {"task": "chain", "seed": 0, "problems": 10, "min_depth": 1, "max_depth": 3, "stop_prob": 0.3,
       "pad_prob": 0.1, "pad_repeats": 3, "steps": 5, "full_steps": 2, "batch_size": 4, "lr": 1e-3,
       "warmup_steps": 1}  # fmt: skip


@pytest.mark.parametrize(
    "change, message",
    [
        ({"steps": None}, "models.tiny.sft.steps must be an integer"),
        ({"stop_prob": 1.5}, r"models.tiny.sft.stop_prob must be in \[0, 1\]"),
        ({"pad_prob": -0.1}, r"models.tiny.sft.pad_prob must be in \[0, 1\]"),
        ({"pad_repeats": -1}, "models.tiny.sft.pad_repeats must be >= 0"),
        ({"full_steps": 5}, "models.tiny.sft.full_steps must be in 0..steps-1"),
        ({"task": "sudoku"}, "models.tiny.sft.task must be one of arithmetic, chain, pointer"),
        ({"max_depth": 0}, "models.tiny.sft.max_depth must be >= min_depth"),
        ({"lr": 0}, "models.tiny.sft.lr must be > 0"),
        ({"epochs": 3}, r"unknown key\(s\) \['epochs'\]"),
        ({"batch_size": 0}, "models.tiny.sft.batch_size must be >= 1, got 0"),
        ({"warmup_steps": -1}, "models.tiny.sft.warmup_steps must be >= 0, got -1"),
    ],
)
def test_a_bad_supervised_stage_key_is_named(change, message):
    from lie.config.supervised import SFTSettings

    mapping = {**SFT, **change}
    with pytest.raises(LieError, match=message):
        SFTSettings.from_mapping(mapping, "models.tiny.sft")
    missing = {k: v for k, v in SFT.items() if k != "seed"}
    with pytest.raises(LieError, match=r"missing key\(s\) \['seed'\]"):
        SFTSettings.from_mapping(missing, "models.tiny.sft")


def test_the_supervised_stage_teaches_full_solutions_then_the_shallow_habit():
    """A few real steps on a tiny model: the record counts the shallow phase only."""
    from lie.config.supervised import SFTSettings
    from lie.stages.sft import run_sft
    from lie.stages.tiny import build_model, build_tokenizer

    settings = SFTSettings.from_mapping({**SFT, "steps": 6, "full_steps": 3, "stop_prob": 1.0}, "sft")
    tok = build_tokenizer([p.solution() for p in C.generate(50, 0, 1, 3)], 300)
    model = build_model(len(tok), tok.eos_token_id, tok.pad_token_id, 0, 16, 1)
    record = run_sft(model, tok, settings, "{question}")
    shallow_phase = record["shallow_phase"]
    assert shallow_phase["examples"] == 3 * 4  # the last 3 steps of 4 examples
    assert shallow_phase["steps_kept"] == {"0": 12}  # stop_prob 1: every shallow example stops at once
    assert shallow_phase["full_solution_share"] == 0.0 and len(record["loss"]) == 1


def test_the_full_solution_phase_does_not_depend_on_the_stop_probability(monkeypatch):
    """preregistration-v3.md: the stop-0.7 models share the full-solution phase of v2's stop-0.5 ones (the
    same examples, drawn from the same random stream), so it may be computed once and forked."""
    import torch

    from lie.config.supervised import SFTSettings
    from lie.stages.sft import run_sft
    from lie.stages.tiny import build_model, build_tokenizer

    tok = build_tokenizer([p.solution() for p in C.generate(50, 0, 1, 3)], 300)
    real = shallow.shallow_example

    def train(stop: float, steps: int) -> tuple[list[str], dict[str, torch.Tensor]]:
        texts: list[str] = []

        def recorded(*args, **kwargs):
            example = real(*args, **kwargs)
            texts.append(example.text)
            return example

        monkeypatch.setattr(shallow, "shallow_example", recorded)
        settings = SFTSettings.from_mapping(
            {**SFT, "steps": steps, "full_steps": 3, "stop_prob": stop}, "sft"
        )
        model = build_model(len(tok), tok.eos_token_id, tok.pad_token_id, 0, 16, 1)
        run_sft(model, tok, settings, "{question}")
        return texts, {k: v.detach().clone() for k, v in model.state_dict().items()}

    texts_05, _ = train(0.5, 6)
    texts_07, _ = train(0.7, 6)
    full = 3 * SFT["batch_size"]
    assert texts_05[:full] == texts_07[:full]  # the full-solution phase's examples
    assert texts_05[full:] != texts_07[full:]  # then the shallow phases part
    # the same initialisation, examples and optimizer give the same weights: training is deterministic here
    _, weights_a = train(0.5, 4)
    _, weights_b = train(0.5, 4)
    assert all(torch.equal(weights_a[k], weights_b[k]) for k in weights_a)


def test_the_study_config_is_valid_and_its_study_section_is_checked():
    """The first registration's config (make study-v1); the second's: tests/test_study_stats.py."""
    from study_pipeline import STUDY_V1, study_config

    from lie.config import RunSettings, validate_config
    from lie.study.spec import study_spec

    config = study_config(STUDY_V1)
    validate_config(config, "study.yaml")
    spec = study_spec(Config.of(config))
    assert [c.name for c in spec.conditions] == ["strong", "weak"]
    strong, weak = spec.conditions
    assert [a.name for a in strong.arms] == ["grpo", "grpo-len", "grpo-lie"] and all(
        len(a.runs) >= 4 for a in strong.arms
    )
    assert [a.name for a in weak.arms] == ["grpo", "grpo-lie"] and all(len(a.runs) >= 3 for a in weak.arms)
    expected = {"grpo": "off", "grpo-len": "length-only", "grpo-lie": "on"}
    for c in spec.conditions:
        for arm in c.arms:
            for run in arm.runs:
                assert (config["experiments"][run]["algorithm"], config["experiments"][run]["lie"]) == (
                    "grpo",
                    expected[arm.name],
                )
                assert config["experiments"][run]["model"] == c.base_model
        seeds = [sorted(RunSettings.of(Config.of(config), r).seed for r in arm.runs) for arm in c.arms]
        assert all(s == seeds[0] for s in seeds)  # every arm has the same seeds: pairs by seed
    # the conditions differ in the supervised stage's stop probability only
    sft = {c.name: dict(config["models"][c.base_model]["sft"]) for c in spec.conditions}
    assert (sft["strong"].pop("stop_prob"), sft["weak"].pop("stop_prob")) == (0.5, 0.35) and sft[
        "strong"
    ] == sft["weak"]
    # same budget for every arm: the runs differ only in algorithm, LIE mode, data, model and seed
    settings = [RunSettings.of(Config.of(config), r) for r in spec.runs]
    for key in (
        "max_steps",
        "train_batch_size",
        "ppo_mini_batch_size",
        "rollout_n",
        "lr",
        "max_response_length",
    ):
        assert len({str(getattr(s, key)) for s in settings}) == 1, key
    for change, message in [
        ({"bench": "nope"}, "study.bench 'nope' is not in evaluation.benchmarks"),
        ({"baseline": "nope"}, "study.baseline 'nope' is not an arm of study.conditions.strong"),
        ({"conditions": {"x": {**config["study"]["conditions"]["strong"], "base_model": "nope"}}},
         "study.conditions.x: base model 'nope' is not in evaluation.base_models"),
        ({"conditions": {"x": {**config["study"]["conditions"]["strong"], "arms": {"a": {"label": "A", "runs": ["nope"]}}}}},
         "study.conditions.x.arms.a.runs names 'nope'"),
        ({"conditions": {"x": {**config["study"]["conditions"]["weak"], "base_model": "tiny-strong"}}},
         r"study.conditions.x: run study_weak_grpo_s0 starts from 'tiny-weak', not from one of \['tiny-strong'\]"),
    ]:  # fmt: skip
        broken = {**config, "study": {**config["study"], **change}}
        with pytest.raises(LieError, match=message):
            study_spec(Config.of(broken))
    with pytest.raises(LieError, match="key 'study': Additional properties"):
        validate_config({**config, "study": {**config["study"], "smooth": 3}}, "study.yaml")
    with pytest.raises(LieError, match="config has no study: section"):
        study_spec(Config.of({k: v for k, v in config.items() if k != "study"}))


def test_the_supervised_stage_is_for_tiny_models_only(tmp_path, capsys):
    from small import write_config
    from study_pipeline import STUDY_V1, study_config

    from lie.cli import main

    config = study_config(STUDY_V1)
    config["outdir"] = str(tmp_path / "out")
    config["models"]["tiny-strong"]["tiny"] = None
    cfg = write_config(tmp_path / "c.yaml", config)
    assert main(["base-model", "tiny-strong", "--config", str(cfg)]) == 2
    assert "models.tiny-strong.sft: the supervised stage is for tiny models" in capsys.readouterr().err
    assert not (tmp_path / "out" / "base" / "tiny-strong").exists()


def test_a_supervised_stage_that_is_no_mapping_or_cannot_make_its_problems_is_one_line():
    from lie.config.supervised import SFTSettings
    from lie.stages.sft import sft_problems

    with pytest.raises(LieError, match="models.tiny.sft must be a mapping with keys task, "):
        SFTSettings.from_mapping(["task", "arithmetic"], "models.tiny.sft")
    deep = SFTSettings.from_mapping({**SFT, "task": "pointer", "min_depth": 50, "max_depth": 60}, "sft")
    with pytest.raises(LieError, match=r"supervised stage \(pointer\): "):
        sft_problems(deep)


def _sft_weights(tok, stop: float, cache=None, steps: int = 6):
    from lie.config.supervised import SFTSettings
    from lie.stages.sft import run_sft
    from lie.stages.tiny import build_model

    settings = SFTSettings.from_mapping({**SFT, "steps": steps, "full_steps": 3, "stop_prob": stop}, "sft")
    model = build_model(len(tok), tok.eos_token_id, tok.pad_token_id, 0, 16, 1)
    record = run_sft(model, tok, settings, "{question}", cache)
    return record, {k: v.detach().clone() for k, v in model.state_dict().items()}


def test_a_model_continued_from_the_saved_full_solution_state_is_the_model_trained_in_one_go(tmp_path):
    """preregistration-v3.md: the stop-0.7 models fork v2's full-solution state (config sft_cache); the
    state is the same whichever stop probability computed it, and continuing from it gives, bit for bit,
    the weights of a run that never stopped (so v2's models are unchanged by the cache)."""
    import torch

    tok = build_tokenizer_for_tests()
    _, plain_05 = _sft_weights(tok, 0.5)
    _, plain_07 = _sft_weights(tok, 0.7)
    first, cached_05 = _sft_weights(tok, 0.5, tmp_path / "cache")
    second, cached_07 = _sft_weights(tok, 0.7, tmp_path / "cache")
    assert first["full_phase"]["restored"] is False and second["full_phase"]["restored"] is True
    assert first["full_phase"]["key"] == second["full_phase"]["key"]
    assert first["loss"] == _sft_weights(tok, 0.5)[0]["loss"]
    for plain, cached in ((plain_05, cached_05), (plain_07, cached_07)):
        assert all(torch.equal(plain[k], cached[k]) for k in plain)
    assert not all(torch.equal(plain_05[k], plain_07[k]) for k in plain_05)  # the shallow phases differ
    # the state saved by a stop-0.7 model is the one a stop-0.5 model saves
    _sft_weights(tok, 0.7, tmp_path / "other")
    (saved,) = (tmp_path / "cache").glob("*.pt")
    mine = torch.load(saved, weights_only=True)
    theirs = torch.load(tmp_path / "other" / saved.name, weights_only=True)
    assert all(torch.equal(mine["model"][k], theirs["model"][k]) for k in mine["model"])
    assert mine["rng"] == theirs["rng"] and mine["scheduler"] == theirs["scheduler"]


def test_another_full_solution_phase_gets_its_own_state_and_a_damaged_one_is_one_line(tmp_path):
    from lie.config.supervised import SFTSettings
    from lie.stages.sft import full_phase_key
    from lie.stages.tiny import build_model

    tok = build_tokenizer_for_tests()
    model = build_model(len(tok), tok.eos_token_id, tok.pad_token_id, 0, 16, 1)
    base = SFTSettings.from_mapping(SFT, "sft")
    key = full_phase_key(model, tok, base, "{question}")
    shallow_only = SFTSettings.from_mapping(
        {**SFT, "stop_prob": 0.9, "pad_prob": 0.5, "pad_repeats": 1}, "sft"
    )
    assert full_phase_key(model, tok, shallow_only, "{question}") == key
    for change in ({"lr": 2e-3}, {"seed": 1}, {"full_steps": 3}, {"steps": 6}):
        other = SFTSettings.from_mapping({**SFT, **change}, "sft")
        assert full_phase_key(model, tok, other, "{question}") != key, change
    assert full_phase_key(model, tok, base, "Q: {question}") != key
    other_init = build_model(len(tok), tok.eos_token_id, tok.pad_token_id, 1, 16, 1)
    assert full_phase_key(other_init, tok, base, "{question}") != key
    _sft_weights(tok, 0.5, tmp_path)
    (saved,) = tmp_path.glob("*.pt")
    saved.write_bytes(b"not a state")
    with pytest.raises(LieError, match=f"{saved}: cannot read the saved full-solution state"):
        _sft_weights(tok, 0.5, tmp_path)


def build_tokenizer_for_tests():
    from lie.stages.tiny import build_tokenizer

    return build_tokenizer([p.solution() for p in C.generate(50, 0, 1, 3)], 300)


def test_a_full_solution_phase_killed_part_way_resumes_where_it_was_saved(tmp_path, monkeypatch):
    """The full-solution phase keeps its state every CHECKPOINT_EVERY steps (sft_cache/<key>.partial.pt): a
    run stopped after a checkpoint takes up from it, and its model is bit for bit the one never stopped."""
    import torch

    import lie.stages.sft as sft

    monkeypatch.setattr(sft, "CHECKPOINT_EVERY", 2)
    tok = build_tokenizer_for_tests()
    _, plain = _sft_weights(tok, 0.5, steps=7)
    real, drawn = shallow.shallow_example, []

    def stopped(*args, **kwargs):  # a kill during the full-solution phase's third step
        drawn.append(1)
        if len(drawn) > 2 * SFT["batch_size"]:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(shallow, "shallow_example", stopped)
    with pytest.raises(KeyboardInterrupt):
        _sft_weights(tok, 0.5, tmp_path, steps=7)
    (partial,) = tmp_path.glob("*.partial.pt")
    assert torch.load(partial, weights_only=True)["step"] == 2 and not list(tmp_path.glob("*[0-9a-f].pt"))
    monkeypatch.setattr(shallow, "shallow_example", real)
    record, resumed = _sft_weights(tok, 0.5, tmp_path, steps=7)
    assert record["full_phase"]["restored"] is False and all(torch.equal(plain[k], resumed[k]) for k in plain)
    assert not partial.exists() and len(list(tmp_path.glob("*.pt"))) == 1  # the phase's end state only
