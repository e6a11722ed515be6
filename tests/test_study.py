"""The CPU study end to end on a shrunken run (tests/study_pipeline.py): the supervised stage leaves a
shallow policy, one RL step of each arm rewards as lie.reward says, the report reads real files."""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from study_pipeline import ARMS, RUNS, pipeline, study_config

from lie.errors import LieError
from lie.reward import RewardConfig, length_reward
from lie.runs import RunDir, read_rollouts

pytestmark = pytest.mark.slow

STEP = re.compile(r"\d+ [+*-] \d+ = \d+\.")
ARM_OF = {run: arm for arm, runs in ARMS.items() for run in runs}


def test_the_supervised_stage_is_recorded():
    p = pipeline()
    source = json.loads((p.base / "lie_source.json").read_text())
    sft = source["sft"]
    assert sft["settings"] == p.config["models"]["tiny"]["sft"]
    assert sft["examples"] == sft["settings"]["steps"] * sft["settings"]["batch_size"]
    # full solutions: (1 - stop_prob)^k on average over depths 1..6
    stop = sft["settings"]["stop_prob"]
    expected = sum((1 - stop) ** k for k in range(1, 7)) / 6
    assert sft["full_solution_share"] == pytest.approx(expected, abs=0.06)
    assert sft["loss"][-1]["loss"] < sft["loss"][0]["loss"] / 3
    assert source["tiny"] == p.config["models"]["tiny"]["tiny"]


def test_the_supervised_stage_leaves_a_shallow_policy():
    """Sampled at the rollout temperature on deep problems: well-formed, shorter than needed, mostly wrong."""
    from lie.engines.generation import SamplingSettings, load_engine
    from lie.prompts import chat_messages, prompt_token_ids, render_question
    from lie.tasks import arithmetic as A

    p = pipeline()
    engine = load_engine("hf", str(p.base))
    problems = A.generate(24, 99, 4, 5)
    template = p.config["prompt"]["math"]
    prompts = [
        prompt_token_ids(engine.tokenizer, chat_messages(render_question(template, q.question())))
        for q in problems
    ]
    outs = engine.generate(
        prompts, SamplingSettings(n=4, max_tokens=64, temperature=1.0), list(range(len(problems)))
    )
    samples = [(q, c) for q, comps in zip(problems, outs) for c in comps]
    needed = [
        len(engine.tokenizer(q.solution(), add_special_tokens=False)["input_ids"]) + 1 for q, _ in samples
    ]
    lengths = [len(c.token_ids) for _, c in samples]
    boxed = [A.boxed_answer(c.text) is not None and c.finish_reason == "stop" for _, c in samples]
    right = [A.check(c.text, q.answer) for q, c in samples]
    assert sum(boxed) / len(samples) > 0.8  # it learned the format: stops after a boxed answer
    assert any(STEP.search(c.text) for _, c in samples)  # and to write steps
    assert sum(lengths) / len(lengths) < 0.7 * sum(needed) / len(needed)  # shallow
    assert sum(right) / len(samples) < 0.3  # mostly wrong on deep problems


def _arm_config(config, run) -> RewardConfig:
    from lie.config import reward_settings

    return RewardConfig.from_mapping(reward_settings(config, run))


@pytest.mark.parametrize("run", RUNS)
def test_one_rl_step_of_each_arm_rewards_as_lie_reward_says(run):
    from lie.study.inputs import loop_config, loop_test

    p = pipeline()
    arm = ARM_OF[run]
    reward = _arm_config(p.config, run)
    assert (reward.length_term, reward.redundancy_term) == {
        "grpo": (False, False), "grpo-len": (True, False), "grpo-lie": (True, True)
    }[arm]  # fmt: skip
    rundir = RunDir(p.layout.root, run)
    rollouts = read_rollouts(rundir)
    assert {r["step"] for r in rollouts} == {1, 2} and len(rollouts) == 2 * 2 * 4
    loops = loop_config(p.config)
    for r in rollouts:
        assert r["reward"] == pytest.approx(r["acc"] + r["r_len"] + r["r_red"], abs=1e-12)
        expected_len = length_reward(bool(r["acc"]), r["num_tokens"], r["ref_len"], reward)
        assert r["r_len"] == pytest.approx(expected_len, rel=1e-12)
        if arm != "grpo-lie":
            assert r["r_red"] == 0.0
        else:
            assert r["r_red"] == (-0.6 if loop_test(r["max_ngram_count"], r["num_tokens"], loops) else 0.0)
    if reward.length_term:  # wrong answers shorter than one sample + 8 - 4 tokens exist: the term acts
        assert any(r["r_len"] < 0 for r in rollouts)
        assert all(r["r_len"] == 0 for r in rollouts if r["acc"])
    settings = json.loads(rundir.run_json.read_text())
    seed = p.config["experiments"][run]["seed"]
    assert settings["settings"]["seed"] == seed and settings["grpo_config"]["seed"] == seed


def test_seeds_change_the_samples():
    p = pipeline()
    first = [r["response"] for r in read_rollouts(RunDir(p.layout.root, "study_grpo_s0"), step=1)]
    other = [r["response"] for r in read_rollouts(RunDir(p.layout.root, "study_grpo_s1"), step=1)]
    assert first != other


@pytest.mark.parametrize(
    "arm_run",
    ["study_grpo_s0", "study_grpo-len_s0", "study_grpo-lie_s0", "study_gspo_s0", "study_gspo-lie_s0"],
)
def test_the_arms_reward_crafted_answers(tmp_path, arm_run):
    """The engine's reward function on a full solution, a short guess and a loop, per arm of study.yaml."""
    from transformers import AutoTokenizer

    from lie.engines.trl_train import LIEReward, Schedule
    from lie.tasks import arithmetic as A

    p = pipeline()
    tok = AutoTokenizer.from_pretrained(p.base)
    problem = A.Problem(7, (("+", 5), ("*", 2), ("-", 3)))
    texts = [
        problem.solution(),  # right, 4 steps' worth of tokens
        A.truncated_solution(problem, 0),  # a short wrong guess
        "7 + 5 = 12. " * 4 + "The answer is \\boxed{12}.",  # a wrong loop: one step four times
        "7 + 5 = 12. " * 4 + problem.solution(),  # a right answer after a loop
    ]
    ids = [tok(t, add_special_tokens=False)["input_ids"] + [tok.eos_token_id] for t in texts]
    config = study_config()
    reward = LIEReward(_arm_config(config, arm_run), tok, RunDir(tmp_path, arm_run), Schedule(1, 1, 1))
    ref = 60  # target 60 - 4 tokens: every answer here is shorter
    got = reward(
        prompts=["q"] * 4, completions=texts, completion_ids=ids, gold=["21"] * 4, ref_len=[ref] * 4,
        kind=["math"] * 4, letters=[[]] * 4, prompt_index=[0] * 4,
    )  # fmt: skip
    eta, extra = config["reward"]["eta"], config["experiments"][arm_run]["extra_tokens"]
    short = [-eta * (1 + extra / ref) * (ref - 4 - len(i)) for i in ids]
    expected = {
        "study_grpo_s0": [1.0, 0.0, 0.0, 1.0],
        "study_grpo-len_s0": [1.0, short[1], short[2], 1.0],
        "study_grpo-lie_s0": [1.0, short[1], short[2] - 0.6, 1.0 - 0.6],
        "study_gspo_s0": [1.0, 0.0, 0.0, 1.0],
        "study_gspo-lie_s0": [1.0, short[1], short[2] - 0.6, 1.0 - 0.6],
    }[arm_run]
    assert short[1] < short[2] < 0  # a longer wrong answer is penalised less
    assert got == pytest.approx(expected, rel=1e-9)


def test_the_study_report_reads_the_files_of_a_real_run(tmp_path):
    import csv

    from lie.cli import main
    from lie.study.report import study_paths

    p = pipeline()
    assert main(["study-report", "--config", str(p.cfg)]) == 0
    paths = study_paths(p.layout)
    for path in paths:
        assert path.exists() and path.stat().st_size > 0, path
    for path in paths[:3]:
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    steps = list(csv.DictReader(paths[3].open()))
    assert len(steps) == len(RUNS) * 2 and {r["arm"] for r in steps} == set(ARMS)
    assert {(r["run"], r["seed"]) for r in steps} == {
        (run, str(p.config["experiments"][run]["seed"])) for run in RUNS
    }
    rollouts = read_rollouts(RunDir(p.layout.root, "study_grpo-lie_s0"), step=2)
    row = next(r for r in steps if r["run"] == "study_grpo-lie_s0" and r["step"] == "2")
    assert float(row["accuracy"]) == pytest.approx(sum(r["acc"] for r in rollouts) / len(rollouts))
    assert float(row["response_length"]) == pytest.approx(
        sum(r["num_tokens"] for r in rollouts) / len(rollouts)
    )
    budgets = list(csv.DictReader(paths[4].open()))
    assert len(budgets) == (len(RUNS) + 1) * 3
    summary = {r["arm"]: r for r in csv.DictReader(paths[5].open())}
    assert list(summary) == ["base", *ARMS]
    per_seed = [json.loads(p.layout.summary(run).read_text())["benchmarks"]["arith-test"]["budgets"]["48"]["avg@n:n=2"]
                for run in ARMS["grpo"]]  # fmt: skip
    assert float(summary["grpo"]["acc_max_budget_mean"]) == pytest.approx(sum(per_seed) / 2)
    assert float(summary["grpo"]["acc_max_budget_min"]) == pytest.approx(min(per_seed))
    assert summary["grpo"]["seeds"] == "2"
    text = paths[6].read_text()
    assert "| GRPO + LIE | 1 |" in text and "supervised base (step 0)" in text and "full solution" in text


def test_the_study_report_names_what_is_missing(tmp_path):
    from lie.study.report import build_study

    config = copy.deepcopy(pipeline().config)
    config["outdir"] = str(tmp_path / "empty")
    with pytest.raises(LieError, match=r"run study_grpo_s0: no rollouts in .*empty/runs/study_grpo_s0"):
        build_study(config)


def test_make_study_is_one_snakemake_target_of_the_same_dag(tmp_path):
    repo = Path(__file__).resolve().parents[1]
    for name in ("Snakefile", "workflow"):  # a work folder of its own: no lock shared with a real run
        os.symlink(repo / name, tmp_path / name)
    config = study_config()
    config["outdir"] = str(tmp_path / "out")
    cfg = tmp_path / "study.yaml"
    cfg.write_text(yaml.safe_dump(config, sort_keys=False))
    make = (repo / "Makefile").read_text()
    threads = re.search(r"^STUDY_THREADS := (.*)$", make, re.M).group(1).split()
    assert "workflow/configs/study.yaml --profile profiles/local $(STUDY_THREADS) --cores 2 study" in make
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "-n",
        "--configfile",
        str(cfg),
        *threads,
        "--cores",
        "2",
        "study",
    ]
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    table = proc.stdout.split("Job stats:", 1)[1]
    counts = {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", table, re.M)}
    runs = len(config["experiments"])
    assert counts == {"data": 2, "base_model": 1, "reflen": 1, "train": runs, "merge": runs,
                      "generate": runs + 1, "evaluate": runs + 1, "study": 1, "total": 4 * runs + 7}  # fmt: skip
    assert "threads: 2" not in proc.stdout  # every job one thread: two jobs share the 2 cores
