"""The CPU study end to end on a shrunken run (tests/study_pipeline.py): the supervised stage, the probe
and gates, two RL steps of each arm rewarded as lie.core.reward says, per-response columns that copy the
grades, and a report that reads real files; `make study` is two targets of the same DAG.

The study is closed (docs/study.md): the tests that read the shrunken run (~2.5 min of make test's CPU to
build) are make test-all's (``heavy``); make test keeps those of its DAG's planning and its reports' inputs."""

from __future__ import annotations

import copy
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import pytest
import yaml
from snakemake.utils import update_config
from study_pipeline import ARMS, BASES, REPO, RUNS, pipeline, small_study_config, study_config

from lie.config import Config
from lie.core.errors import LieError
from lie.core.reward import RewardConfig, length_reward
from lie.formats.runs import RunDir, read_rollouts

pytestmark = pytest.mark.slow

ARM_OF = {run: arm for arms in ARMS.values() for arm, runs in arms.items() for run in runs}


@pytest.mark.heavy
def test_the_supervised_stage_is_recorded():
    p = pipeline()
    for model in BASES:
        source = json.loads((p.layout.base_model(model) / "lie_source.json").read_text())
        sft = source["sft"]
        settings = sft["settings"]
        assert settings == {"replay": 0.0, **p.config["models"][model]["sft"]}  # no replay unless asked
        shallow = sft["shallow_phase"]
        assert shallow["examples"] == (settings["steps"] - settings["full_steps"]) * settings["batch_size"]
        # full solutions in the shallow phase: (1 - stop_prob)^k on average over depths 1..7
        expected = sum((1 - settings["stop_prob"]) ** k for k in range(1, 8)) / 7
        assert shallow["full_solution_share"] == pytest.approx(expected, abs=0.06)
        assert 0 < shallow["padded_share"] < settings["pad_prob"]  # only examples that wrote a step pad
        assert sft["loss"][-1]["loss"] < sft["loss"][0]["loss"] / 2
        assert source["tiny"] == p.config["models"][model]["tiny"]


@pytest.mark.heavy
def test_the_probe_samples_the_supervised_models_as_the_rollouts_do():
    from lie.study.paths import StudyPaths

    p = pipeline()
    paths, training = StudyPaths(p.layout), p.config["training"]
    for model in BASES:
        lines = [json.loads(x) for x in paths.probe_generations(model).read_text().splitlines()]
        per_problem = defaultdict(int)
        for line in lines:
            per_problem[line["index"]] += 1
            assert line["num_tokens"] <= training["max_response_length"]
        assert set(per_problem.values()) == {p.config["study"]["probe"]["n"]}
        assert len(per_problem) == p.config["datasets"]["eval"]["chain-test"]["expected_rows"]


@pytest.mark.heavy
def test_the_responses_copy_the_grades_and_read_depth_from_the_generations():
    from lie.study.paths import StudyPaths
    from lie.tasks import chain

    p = pipeline()
    key = "v2_strong_grpo-lie_m0_s0"
    rows = [json.loads(x) for x in StudyPaths(p.layout).responses(key).read_text().splitlines()]
    scores = {
        (s["index"], s["sample"]): s
        for s in map(json.loads, p.layout.graded(key, "scores").read_text().splitlines())
    }
    gens = {
        (g["index"], g["sample"]): g
        for g in map(json.loads, p.layout.generations(key, "chain-test").read_text().splitlines())
    }
    questions = chain.generate(12, 12, 4, 7)  # the test set's own seed and depths (study_pipeline)
    assert len(rows) == len(scores) == len(gens)
    for row in rows:
        k = (row["index"], row["sample"])
        assert row["correct"] == {b: g["correct"] for b, g in scores[k]["grades"].items()}
        problem = questions[row["index"]]
        t = chain.trace(problem, gens[k]["text"])
        assert (row["depth_needed"], row["depth_written"], row["depth_reached"]) == (
            problem.depth,
            t.depth_written,
            t.depth_reached,
        )
        assert row["num_tokens"] == gens[k]["num_tokens"]


def _arm_config(config, run) -> RewardConfig:
    from lie.config import reward_settings

    return RewardConfig.from_mapping(reward_settings(Config.of(config), run))


@pytest.mark.heavy
@pytest.mark.parametrize("run", RUNS)
def test_two_rl_steps_of_each_arm_reward_as_lie_reward_says(run):
    from lie.study.responses import loop_config, loop_test

    p = pipeline()
    arm = ARM_OF[run]
    reward = _arm_config(p.config, run)
    assert (reward.length_term, reward.redundancy_term) == {"grpo": (False, False), "grpo-lie": (True, True)}[
        arm
    ]
    rundir = RunDir(p.layout.root, run)
    rollouts = read_rollouts(rundir)
    assert {r["step"] for r in rollouts} == {1, 2} and len(rollouts) == 2 * 2 * 4
    loops = loop_config(Config.of(p.config))
    for r in rollouts:
        assert r["reward"] == pytest.approx(r["acc"] + r["r_len"] + r["r_red"], abs=1e-12)
        expected_len = length_reward(bool(r["acc"]), r["num_tokens"], r["ref_len"], reward)
        assert r["r_len"] == pytest.approx(expected_len, rel=1e-12)
        if arm != "grpo-lie":
            assert r["r_red"] == 0.0
        else:
            assert r["r_red"] == (-0.6 if loop_test(r["max_ngram_count"], r["num_tokens"], loops) else 0.0)
    settings = json.loads(rundir.run_json.read_text())
    seed = p.config["experiments"][run]["seed"]
    assert settings["settings"]["seed"] == seed and settings["grpo_config"]["seed"] == seed


@pytest.mark.heavy
def test_seeds_change_the_samples():
    p = pipeline()
    first = [r["response"] for r in read_rollouts(RunDir(p.layout.root, "v2_strong_grpo_m0_s0"), step=1)]
    other = [r["response"] for r in read_rollouts(RunDir(p.layout.root, "v2_strong_grpo_m0_s1"), step=1)]
    assert first != other


@pytest.mark.heavy
@pytest.mark.parametrize(
    "config_file, arm_run",
    [
        ("study-v1.yaml", "study_strong_grpo_s0"),
        ("study-v1.yaml", "study_strong_grpo-len_s0"),
        ("study-v1.yaml", "study_strong_grpo-lie_s0"),
        ("study.yaml", "v2_strong_grpo_m0_s0"),
        ("study.yaml", "v2_strong_grpo-lie_m0_s0"),
    ],
)
def test_the_arms_reward_crafted_answers(tmp_path, config_file, arm_run):
    """The engine's reward function on a full solution, a short wrong answer and a loop, per arm of both
    registered configs (the same reward; the second study moves only the reference length's offset)."""
    from transformers import AutoTokenizer

    from lie.config import grading_limits
    from lie.engines.rewarding import Rewarder
    from lie.engines.trl.train import LIEReward, Schedule
    from lie.tasks import arithmetic as A

    p = pipeline()
    tok = AutoTokenizer.from_pretrained(p.layout.base_model("tiny-m0"))
    problem = A.Problem(7, (("+", 5), ("*", 2), ("-", 3)))
    texts = [
        problem.solution(),  # right
        A.written_solution(problem, 0),  # a short wrong answer
        A.written_solution(problem, 1, repeats=3),  # the padding channel: one step four times, wrong
        "7 + 5 = 12. " * 3 + problem.solution(),  # a right answer after a loop
    ]
    ids = [tok(t, add_special_tokens=False)["input_ids"] + [tok.eos_token_id] for t in texts]
    config = study_config(REPO / "workflow" / "configs" / config_file)
    ref = 70  # target 70 - 4 tokens: every answer here is shorter
    row = json.dumps({"data_source": "chain", "ability": "math", "extra_info": {"index": 0},
                      "reward_model": {"ground_truth": "21", "num_tokens": ref}})  # fmt: skip
    with Rewarder(*grading_limits(Config.of(config))) as rewarder:
        reward = LIEReward(
            _arm_config(config, arm_run), tok, RunDir(tmp_path, arm_run), Schedule(1, 1, 1), rewarder
        )
        got = reward(
            prompts=["q"] * 4, completions=texts, completion_ids=ids, row=[row] * 4,
            where=[f"row {i}" for i in range(4)], prompt_index=[0] * 4,
        )  # fmt: skip
    eta = config["reward"]["eta"]
    short = [-eta * (ref - 4 - len(i)) for i in ids]
    expected = {
        "grpo": [1.0, 0.0, 0.0, 1.0],
        "grpo-len": [1.0, short[1], short[2], 1.0],
        "grpo-lie": [1.0, short[1], short[2] - 0.6, 1.0 - 0.6],
    }[arm_run.split("_")[2]]
    assert short[1] < short[2] < 0  # padding pays the length term, and only LIE's R_red takes it back
    assert got == pytest.approx(expected, rel=1e-9)


@pytest.mark.heavy
def test_the_gates_read_the_probes_and_stop_with_the_failed_ones(tmp_path, capsys):
    from small import write_config

    from lie.cli import main
    from lie.study.paths import StudyPaths

    p = pipeline()
    config = copy.deepcopy(p.config)
    config["study"]["gates"].update(step_accuracy=0.0, full_depth_accuracy=0.0, full_depth_samples=1)
    for condition in config["study"]["conditions"].values():
        condition["trap_index"] = [0.0, 1.0]
    assert main(["study-gates", "--config", str(write_config(tmp_path / "open.yaml", config))]) == 0
    table = StudyPaths(p.layout).gates[0].read_text()
    assert table.count("| pass |") == 6 and "tiny-m0" in table and "tiny-m1" in table  # 3 levels x 2 models
    assert "Thresholds pre-registered in `docs/study/preregistration-v2.md`" in table  # the second's
    config["study"]["gates"]["full_depth_samples"] = 10**6
    assert main(["study-gates", "--config", str(write_config(tmp_path / "closed.yaml", config))]) == 2
    err = capsys.readouterr().err
    assert (
        "a gate on the supervised models failed (change only the supervised stage): "
        "weak (tiny-m0): accuracy given full depth" in err
    )


@pytest.mark.heavy
def test_the_study_report_reads_the_files_of_a_real_run():
    from lie.cli import main
    from lie.study.paths import StudyPaths, study_paths

    p = pipeline()
    assert main(["study-report", "--config", str(p.cfg)]) == 0
    paths = study_paths(p.layout)
    for path in paths:
        assert path.exists() and path.stat().st_size > 0, path
    for path in paths[:3]:
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert paths[8].name == "study_tests.csv"
    steps = list(csv.DictReader(paths[3].open()))
    assert len(steps) == len(RUNS) * 2 and {(r["condition"], r["arm"]) for r in steps} == {
        (c, a) for c, arms in ARMS.items() for a in arms
    }
    # the trap index of a step: groups of the rollouts whose samples all got the same grade
    run = "v2_strong_grpo-lie_m0_s0"
    rollouts = read_rollouts(RunDir(p.layout.root, run), step=2)
    groups = defaultdict(set)
    for r in rollouts:
        groups[r["group"]].add(r["acc"])
    row = next(r for r in steps if r["run"] == run and r["step"] == "2")
    assert float(row["trap_index"]) == pytest.approx(sum(len(g) == 1 for g in groups.values()) / len(groups))
    assert float(row["response_length"]) == pytest.approx(
        sum(r["num_tokens"] for r in rollouts) / len(rollouts)
    )
    # the mechanism readouts: groups with no advantage under the arm's own reward, R_len's share
    rewards = defaultdict(set)
    for r in rollouts:
        rewards[r["group"]].add(round(r["reward"], 9))
    assert float(row["zero_adv_share"]) == pytest.approx(
        sum(len(g) == 1 for g in rewards.values()) / len(rewards)
    )
    assert float(row["len_applied"]) == pytest.approx(sum(r["r_len"] < 0 for r in rollouts) / len(rollouts))
    run_rows = [r for r in steps if r["run"] == run]
    escaped = [int(r["step"]) for r in run_rows if float(r["trap_index"]) < 0.6]
    assert {r["escape_step"] for r in run_rows} == {str(min(escaped)) if escaped else ""}
    # accuracy at a budget: the condition's test problems in the responses (grades copied from lie evaluate)
    budgets = list(csv.DictReader(paths[4].open()))
    responses = [json.loads(x) for x in StudyPaths(p.layout).responses(run).read_text().splitlines()]
    strong = [r for r in responses if 6 <= r["depth_needed"] <= 7]
    row = next(r for r in budgets if r["key"] == run and r["budget"] == "64")
    assert row["condition"] == "strong"
    assert float(row["accuracy"]) == pytest.approx(sum(r["correct"]["64"] for r in strong) / len(strong))
    # paired differences: arm minus GRPO with the same seed
    summary = list(csv.DictReader(paths[5].open()))
    assert [(r["condition"], r["arm"], r["strength"]) for r in summary] == [
        (level, arm, str(strength))
        for level, strength in (("weak", 0.597), ("mid", 0.776), ("strong", 0.91))
        for arm in ("base", "grpo", "grpo-lie")
    ]
    base = next(r for r in summary if r["condition"] == "strong" and r["arm"] == "base")
    assert base["seeds"] == "2"  # the two supervised models, averaged
    by_pair = {}
    for r in budgets:
        if r["condition"] == "strong" and r["budget"] == "64" and r["key"] not in BASES:
            spec = p.config["experiments"][r["key"]]
            by_pair[(r["arm"], f"{spec['model']}/s{spec['seed']}")] = float(r["accuracy"])
    paired_rows = list(csv.DictReader(paths[6].open()))
    primary = next(r for r in paired_rows if r["condition"] == "strong" and r["registered"] == "primary")
    pairs = ("tiny-m0/s0", "tiny-m0/s1", "tiny-m1/s0")  # paired by supervised model and seed
    assert primary["seeds"].split() == list(pairs)
    diffs = [by_pair[("grpo-lie", k)] - by_pair[("grpo", k)] for k in pairs]
    assert [float(d) for d in primary["diffs"].split()] == pytest.approx(diffs, abs=1e-4)
    assert float(primary["mean"]) == pytest.approx(sum(diffs) / 3)
    # the second registration's tests, on the same differences
    from lie.study.stats import paired_test

    tests = {r["test"]: r for r in csv.DictReader(paths[8].open())}
    assert set(tests) == {"effect:weak", "effect:mid", "primary", "interaction", "slope", "persistence"}
    expected = paired_test([float(d) for d in primary["diffs"].split()])
    held = tests["persistence"]["verdict"] == "holds"
    qualifier = "" if held else "; the trap did not persist"  # on every verdict where the check fails
    if expected is None:  # no spread: the test cannot be read
        assert tests["primary"]["verdict"] == "no result (too few pairs, or no spread)"
    else:
        assert float(tests["primary"]["p"]) == pytest.approx(expected.p, abs=1e-3)
        assert (
            tests["primary"]["verdict"] == ("supported" if expected.p < 0.05 else "not supported") + qualifier
        )
    # make study gives no verdict on the interaction and the slope, nor on a level other than the strong one
    assert tests["primary"]["n"] == "3"
    assert (
        tests["interaction"]["verdict"]
        == tests["slope"]["verdict"]
        == ("no verdict: underpowered at this look (decided by make study-full)")
    )
    assert (
        tests["effect:weak"]["verdict"]
        == tests["effect:mid"]["verdict"]
        == "no verdict: not a registered test"
    )
    trap_means = [
        sum(float(r["trap_index"]) for r in steps if r["arm"] == "grpo" and r["condition"] == "strong"
            and r["step"] == str(step)) / 3
        for step in (1, 2)
    ]  # fmt: skip
    assert float(tests["persistence"]["estimate"]) == pytest.approx(min(trap_means[0], sum(trap_means) / 2))
    assert tests["persistence"]["verdict"] == (
        "holds" if float(tests["persistence"]["estimate"]) >= 0.6 else "fails"
    )
    assert primary["verdict"].removesuffix(qualifier) in (
        "supported",
        "not supported",
        "rule met; no evidence of an effect",
    )
    assert primary["prediction"] == "positive" and primary["verdict"].endswith(qualifier)
    weak = next(r for r in paired_rows if r["condition"] == "weak" and r["registered"] == "primary")
    assert weak["prediction"] == "zero"
    assert weak["verdict"] in ("as predicted" + qualifier, "not as predicted" + qualifier)
    # another machine's pairs pooled as further pairs (here: a copy of this study's outdir, its pairs twice;
    # the outdir itself is refused as a --pool: its tables/ are this command's outputs)
    other = Path(tempfile.mkdtemp(prefix="lie-study-pool-")) / "other"
    for part in ("tables", "runs"):
        shutil.copytree(p.layout.root / part, other / part)
    assert main(["study-report", "--config", str(p.cfg), "--pool", str(other)]) == 0
    pooled = {r["test"]: r for r in csv.DictReader((paths[8].parent / "study_tests_pooled.csv").open())}
    assert pooled["primary"]["machines"] == "2" and pooled["primary"]["n"] == "6"
    # the pool's persistence check reads both machines' GRPO runs (here the same runs twice: the same value)
    assert (
        pooled["persistence"]["n"] == "6"
        and pooled["persistence"]["verdict"] == tests["persistence"]["verdict"]
    )
    if tests["primary"]["estimate"]:  # (no spread over the pairs: no test, here or pooled)
        assert float(pooled["primary"]["estimate"]) == pytest.approx(float(tests["primary"]["estimate"]))
    text = paths[7].read_text()
    for heading in ("## The registered tests (docs/study/preregistration-v2.md)", "Persistence check",
                    "## The first registration's rule, for continuity only", "## Gates on the supervised models", "(condition `strong`)",
                    "(condition `weak`)", "(condition `mid`)", "| GRPO + LIE | 3 |", "supervised models (step 0)"):  # fmt: skip
        assert heading in text


def test_the_study_report_names_what_is_missing(tmp_path):
    from lie.study.report import build_study

    config = small_study_config(tmp_path / "empty")  # the shrunken study's config, nothing built
    with pytest.raises(
        LieError, match=r"run v2_weak_grpo_m1_s0: no rollouts in .*empty/runs/v2_weak_grpo_m1_s0"
    ):
        build_study(Config.of(config))


def test_make_study_is_two_snakemake_targets_of_the_same_dag(tmp_path):
    repo = Path(__file__).resolve().parents[1]
    for name in ("Snakefile", "workflow"):  # a work folder of its own: no lock shared with a real run
        os.symlink(repo / name, tmp_path / name)
    config = study_config()
    config["outdir"] = str(tmp_path / "out")
    cfg = tmp_path / "study.yaml"
    cfg.write_text(yaml.safe_dump(config, sort_keys=False))
    full = tmp_path / "study-full.yaml"
    shutil.copy(repo / "workflow" / "configs" / "study-full.yaml", full)
    make = (repo / "Makefile").read_text()
    threads = re.search(r"^STUDY_THREADS := (.*)$", make, re.M).group(1).split()
    assert "STUDY_OPTS := --profile profiles/local $(STUDY_THREADS) --cores $(STUDY_CORES)" in make
    assert "STUDY_V2_SMK := $(SMK) --configfile workflow/configs/study.yaml $(STUDY_OPTS)" in make
    full_files = "--configfile workflow/configs/study.yaml workflow/configs/study-full.yaml $(STUDY_OPTS)"
    assert f"STUDY_FULL_SMK := $(SMK) {full_files}" in make
    for smk in ("STUDY_V2_SMK", "STUDY_FULL_SMK", "STUDY_V1_SMK"):  # gates first
        assert re.search(rf"^\t\$\({smk}\) study_gates\n\t\$\({smk}\) study$", make, re.M)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}

    def dry_run(target: str, *more: Path) -> dict[str, int]:
        cmd = [
            sys.executable,
            "-m",
            "snakemake",
            "-n",
            "--configfile",
            str(cfg),
            *map(str, more),
            *threads,
            "--cores",
            "2",
            target,
        ]
        proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert "threads: 2" not in proc.stdout  # every job one thread: two jobs share the 2 cores
        table = proc.stdout.split("Job stats:", 1)[1]
        return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", table, re.M)}

    def expected(config: dict) -> dict[str, int]:
        runs, bases = len(config["experiments"]), len(config["evaluation"]["base_models"])
        gates = {"data": 4, "base_model": bases, "study_probe": bases, "study_gates": 1}
        per_model = {"generate": runs + bases, "evaluate": runs + bases, "study_responses": runs + bases}
        reflen = len(
            {(e["data"], e["model"]) for e in config["experiments"].values()}
        )  # one per data x model
        return {**gates, "reflen": reflen, "train": runs, "merge": runs, **per_model, "study": 1}

    study = expected(config)
    gates = {k: study[k] for k in ("data", "base_model", "study_probe", "study_gates")}
    assert dry_run("study_gates") == {**gates, "total": sum(gates.values())}
    assert dry_run("study") == {**study, "total": sum(study.values())}
    merged = copy.deepcopy(config)
    update_config(merged, yaml.safe_load(full.read_text()))
    assert len(merged["experiments"]) > len(config["experiments"])
    study_full = expected(merged)
    assert dry_run("study", full) == {**study_full, "total": sum(study_full.values())}


def test_make_study_uses_every_core_of_the_machine_unless_told(tmp_path):
    """Issue 36: `make study` gives Snakemake the machine's cores (nproc), not a fixed 2; STUDY_CORES overrides;
    it runs the third registration's config, the gates first, under the CPU-minute count."""
    repo = Path(__file__).resolve().parents[1]

    def cores(*more: str) -> set[str]:
        proc = subprocess.run(
            ["make", "-n", "study", *more], cwd=repo, capture_output=True, text=True, timeout=60
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert "workflow/scripts/cpu_time.py" in proc.stdout
        calls = re.findall(r"lie snakemake (.*?) (study_gates|study)\b", proc.stdout)
        assert [target for _, target in calls] == ["study_gates", "study"], proc.stdout[-2000:]
        assert all("--configfile workflow/configs/study-v3.yaml" in call for call, _ in calls)
        return {re.search(r"--cores (\S+)", call).group(1) for call, _ in calls}

    assert cores() == {str(len(os.sched_getaffinity(0)))}
    assert cores("STUDY_CORES=3") == {"3"}


def test_make_studys_dag_generates_only_the_deep_test_problems(tmp_path):
    """Issue 36 item 4: the third registration generates and grades only its 212 test problems, and its
    models need no supervised stage of their own beyond the shallow phase (sft_cache)."""
    repo = Path(__file__).resolve().parents[1]
    for name in ("Snakefile", "workflow"):
        os.symlink(repo / name, tmp_path / name)
    config = study_config(REPO / "workflow" / "configs" / "study-v3.yaml")
    config["outdir"], config["sft_cache"] = str(tmp_path / "out"), str(tmp_path / "cache")
    cfg = tmp_path / "study-v3.yaml"
    cfg.write_text(yaml.safe_dump(config, sort_keys=False))
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    cmd = [sys.executable, "-m", "snakemake", "-n", "--configfile", str(cfg), "--cores", "2", "study"]
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    table = proc.stdout.split("Job stats:", 1)[1]
    jobs = {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", table, re.M)}
    runs, bases = 48, 2
    assert jobs["train"] == jobs["merge"] == runs and jobs["base_model"] == bases
    assert jobs["generate"] == jobs["evaluate"] == jobs["study_responses"] == runs + bases
    assert jobs["study_probe"] == 2 * bases  # natural and forced-depth
    assert jobs["reflen"] == bases  # one data set x 2 models
    generated = set(re.findall(r"generations/[^/\s]+/([\w-]+)\.jsonl", proc.stdout))
    assert generated == {"chain-test-deep"}
