"""What reruns when a setting changes, what a dry run may touch, and resuming after a kill.

The paper's DAG is marked complete once (`snakemake --touch --forceall` over empty outputs records
every job's params, as a finished run would); each case then edits one key on a copy of the config
and reads the job list `snakemake -n` plans.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml
from small import (
    arithmetic_rows,
    lie_in_process,
    paper_config,
    small_config,
    verl_checkpoint,
    write_config,
    write_parquet,
)

from lie.config import Config, RunSettings
from lie.formats.runs import RunDir

REPO = Path(__file__).resolve().parents[1]
LIE_ON = {
    "qwen3-4b-base_dapo_grpo_lie", "qwen3-4b-base_dapo_grpo-clip-higher_lie", "qwen3-4b-base_dapo_gspo_lie",
    "qwen3-4b-base_dapo_gspo_lie_12k", "qwen3-4b_polaris_gspo_lie", "octothinker-3b_deepmath-5k_gspo_lie",
    "qwen3-1.7b-base_dapo_gspo_lie", "qwen3-8b-base_dapo_gspo_lie",
}  # fmt: skip


# `snakemake --touch` as it is, but for the 0.1 s its touch executor sleeps before each job's files
# (snakemake/executors/touch.py, Executor.SLEEPING_TIME): 30 s over the paper's DAG, for no check here.
# Each touch still goes through Snakemake's own scheduler and records the job's metadata.
TOUCH_WITHOUT_SLEEP = (
    "import sys, snakemake.executors.touch as touch; touch.Executor.SLEEPING_TIME = 0; "
    "from snakemake.cli import main; main(sys.argv[1:])"
)


def _snakemake(workdir: Path, config: dict, *args: str, name: str = "c.yaml") -> subprocess.CompletedProcess:
    (workdir / name).write_text(yaml.safe_dump(config, sort_keys=False))
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    snakemake = ["-c", TOUCH_WITHOUT_SLEEP] if "--touch" in args else ["-m", "snakemake"]
    cmd = [sys.executable, *snakemake, "--configfile", name, "--cores", "1", *args]
    return subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> tuple[Path, dict]:
    """The paper's DAG with every output present and every job's metadata recorded."""
    workdir = tmp_path_factory.mktemp("dag")
    for name in ("Snakefile", "workflow"):
        os.symlink(REPO / name, workdir / name)
    config = paper_config()
    config["outdir"] = str(workdir / "out")
    summary = _snakemake(workdir, config, "--summary")
    assert summary.returncode == 0, summary.stderr[-3000:]
    for line in summary.stdout.splitlines()[1:]:
        path, _, rule = line.split("\t")[:3]
        if rule in ("base_model", "merge"):  # directory outputs
            Path(path).mkdir(parents=True, exist_ok=True)
        else:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).touch()
    touched = _snakemake(workdir, config, "--touch", "--forceall", "--quiet")
    assert touched.returncode == 0, touched.stderr[-3000:]
    return workdir, config


def _planned(workdir: Path, config: dict) -> list[tuple[str, str]]:
    """(rule, wildcards) of every job `snakemake -n` would run with ``config``."""
    proc = _snakemake(workdir, config, "-n", name="edited.yaml")
    assert proc.returncode == 0, proc.stderr[-3000:]
    jobs, rule = [], None
    for line in proc.stdout.splitlines():
        line = line.strip()
        if line.startswith(("rule ", "localrule ")) and line.endswith(":"):
            rule = line.split()[1][:-1]
            jobs.append((rule, ""))
        elif line.startswith("wildcards:") and jobs:
            jobs[-1] = (jobs[-1][0], line.split(":", 1)[1].strip())
    return jobs


def _edited(config: dict, section: str, key: str, value) -> dict:
    edited = copy.deepcopy(config)
    edited[section][key] = value
    return edited


def test_the_touched_dag_has_nothing_to_do(finished):
    workdir, config = finished
    assert _planned(workdir, config) == []


def test_a_redundancy_knob_retrains_only_the_runs_that_use_it(finished):
    workdir, config = finished
    jobs = _planned(workdir, _edited(config, "reward", "beta", 0.5))
    trained = {w.removeprefix("run=") for r, w in jobs if r == "train"}
    assert trained == LIE_ON  # not the baselines, not the length-only ablation
    assert not any(r in ("data", "reflen", "base_model") for r, _ in jobs)


def test_a_length_knob_retrains_the_ablation_too(finished):
    workdir, config = finished
    trained = {w.removeprefix("run=") for r, w in _planned(workdir, _edited(config, "reward", "eta", 4e-5))
               if r == "train"}  # fmt: skip
    assert trained == LIE_ON | {"qwen3-4b-base_dapo_gspo_len-only"}


def test_the_choice_template_rebuilds_only_the_choice_benchmarks(finished):
    workdir, config = finished
    edited = copy.deepcopy(config)
    edited["prompt"]["choice"] = "Q: {question}\n{choices}\nAnswer with the letter in \\boxed{{}}."
    counts = Counter(rule for rule, _ in _planned(workdir, edited))
    assert counts["train"] == counts["reflen"] == 0
    data = {w for r, w in _planned(workdir, edited) if r == "data"}
    assert data == {"dataset=arc-c", "dataset=gpqa-diamond", "dataset=mmlu-pro"}


EXECUTION_SETTINGS = [
    ("training", "nnodes", 2), ("training", "n_gpus_per_node", 8),
    ("training", "logger", ["console", "file", "wandb"]), ("training", "save_freq", 25),
    ("training", "keep_checkpoints", 3), ("training", "walltime_min", 600), ("training", "retries", 1),
    ("reflen", "shard_size", 7),  # how often reflen saves its work, as evaluation.shard_size
]  # fmt: skip


def test_how_a_run_executes_reruns_nothing(finished):
    """Every execution setting edited at once, in one dry run (each edit can only add jobs to what the
    others plan, so none of them reruns anything when together they plan nothing)."""
    workdir, config = finished
    edited = copy.deepcopy(config)
    for section, key, value in EXECUTION_SETTINGS:
        assert key in edited[section], f"{section}.{key}"  # the edit is of a real key
        edited[section][key] = value
    assert _planned(workdir, edited) == []


@pytest.mark.parametrize("key, value", [("grade_timeout_s", 30), ("choice_grading", "authors")])
def test_grading_settings_regrade_without_regenerating(finished, key, value):
    workdir, config = finished
    counts = Counter(rule for rule, _ in _planned(workdir, _edited(config, "evaluation", key, value)))
    assert counts["evaluate"] == 17 and counts["report"] == 1
    assert counts["generate"] == counts["train"] == counts["merge"] == 0


def test_a_dry_run_never_rewrites_the_config_running_jobs_read(finished):
    workdir, config = finished
    live = workdir / "out" / "config.yaml"
    before = live.read_text()  # written by the (touch) run's start
    assert yaml.safe_load(before)["reward"]["beta"] == config["reward"]["beta"]
    edited = _edited(config, "reward", "beta", 0.25)
    for args in (["-n"], ["--lint"], ["--rulegraph"], ["--summary"]):
        _snakemake(workdir, edited, *args, name="other.yaml")
        assert live.read_text() == before, args


# ---- resuming the engines after a kill, and new settings -----------------------------------------


@pytest.fixture(scope="module")
def tiny(arith_tiny) -> Path:
    return arith_tiny  # built once per pytest run (tests/conftest.py)


def _trl(caplog, cfg: Path, train: Path, *extra: str) -> str:
    """``lie train tiny_grpo`` with TRL, in this process: its log (tests/small.py, lie_in_process)."""
    return lie_in_process(caplog, "train", "tiny_grpo", "--config", str(cfg), "--engine", "trl",
                          "--train-file", str(train), *extra)  # fmt: skip


def test_trl_resumes_from_the_newest_complete_checkpoint_and_sets_a_torn_one_aside(tmp_path, tiny, caplog):
    train = write_parquet(tmp_path / "train.parquet", arithmetic_rows(8, ref_len=600))
    cfg = write_config(tmp_path / "c.yaml", small_config(tmp_path / "out", tiny))
    _trl(caplog, cfg, train, "--stop-after", "1")
    rundir = RunDir(tmp_path / "out", "tiny_grpo")
    torn = rundir.checkpoints / "checkpoint-2"  # killed while saving: no trainer_state.json
    (torn).mkdir()
    (torn / "model.safetensors").write_bytes(b"partial")
    second = _trl(caplog, cfg, train)
    assert "no trainer_state.json" in second
    assert list((rundir.superseded / "torn").glob("checkpoint-2-*"))
    assert json.loads(rundir.final_json.read_text())["step"] == 3
    assert (rundir.checkpoints / "checkpoint-3" / "trainer_state.json").exists()


def test_trl_keeps_its_checkpoints_for_the_same_settings_only(tmp_path, tiny, caplog):
    train = write_parquet(tmp_path / "train.parquet", arithmetic_rows(8, ref_len=600))
    config = small_config(tmp_path / "out", tiny, max_steps=1)
    cfg = write_config(tmp_path / "c.yaml", config)
    _trl(caplog, cfg, train)
    rundir = RunDir(tmp_path / "out", "tiny_grpo")
    config["training"]["logger"] = ["console"]  # how it logs: the same run
    write_config(cfg, config)
    assert "already trained" in _trl(caplog, cfg, train)
    assert not rundir.superseded.exists()
    config["training"]["lr"] = 5e-4  # what it learns: another run
    write_config(cfg, config)
    other = _trl(caplog, cfg, train)
    (moved,) = rundir.superseded.iterdir()
    assert (moved / "checkpoints" / "checkpoint-1" / "trainer_state.json").exists()
    assert "made with other settings" in other
    assert (rundir.checkpoints / "checkpoint-1").exists()  # trained again, afresh


def test_a_run_never_resumes_checkpoints_trained_on_another_file(tmp_path, tiny, caplog):
    """Issue 33 item 4: ``lie train RUN --train-file OTHER`` resumed the checkpoints trained on another
    file and exited 0. The inputs' digest (training file, initial model) is part of what a run is: other
    inputs set the old outputs aside (nothing deleted) and the run trains afresh; the same ones resume."""
    train = write_parquet(tmp_path / "train.parquet", arithmetic_rows(8, ref_len=600))
    other = write_parquet(tmp_path / "other.parquet", arithmetic_rows(6, ref_len=600))
    config = small_config(tmp_path / "out", tiny, max_steps=1)
    cfg = write_config(tmp_path / "c.yaml", config)
    _trl(caplog, cfg, train)
    rundir = RunDir(tmp_path / "out", "tiny_grpo")
    assert "already trained" in _trl(caplog, cfg, train) and not rundir.superseded.exists()
    switched = _trl(caplog, cfg, other)
    assert "already trained" not in switched and "trained on other inputs" in switched
    (moved,) = rundir.superseded.iterdir()
    assert (moved / "checkpoints" / "checkpoint-1" / "trainer_state.json").exists()


def test_verl_checkpoints_after_a_kill_are_repaired_before_a_relaunch(tmp_path):
    from lie.engines.verl import checkpoints as verl_checkpoints

    rundir = RunDir(tmp_path, "r")
    folder = rundir.checkpoints
    for step in (10, 20, 30):
        verl_checkpoint(folder, step)
    verl_checkpoint(folder, 40, complete=False)  # killed while saving step 40
    (folder / "global_step_5").mkdir()
    (folder / "global_step_5" / "data.pt").write_bytes(b"")  # verl's own retention removed actor/
    (folder / verl_checkpoints.TRACKER).write_text("30")
    assert verl_checkpoints.repair(rundir, keep=2) == 30
    assert sorted(verl_checkpoints.steps(folder)) == [20, 30]
    assert [p.name.split("-")[0] for p in (rundir.superseded / "torn").iterdir()] == ["global_step_40"]
    # a tracker torn while written, or naming a folder that is gone: the newest complete one counts
    (folder / verl_checkpoints.TRACKER).write_text("")
    assert verl_checkpoints.repair(rundir) == 30
    (folder / verl_checkpoints.TRACKER).write_text("50")
    assert verl_checkpoints.repair(rundir) == 30
    assert (folder / verl_checkpoints.TRACKER).read_text() == "30"
    # a fixed eval_step survives the retention
    verl_checkpoint(folder, 60)
    (folder / verl_checkpoints.TRACKER).write_text("60")
    assert verl_checkpoints.repair(rundir, keep=1, protect=frozenset({20})) == 60
    assert sorted(verl_checkpoints.steps(folder)) == [20, 60]


@pytest.mark.parametrize("eval_step", ["best_val", "final"])
def test_a_relaunch_keeps_every_validated_checkpoint_of_a_best_val_run(tmp_path, tiny, eval_step):
    """16 checkpoints, validation every 100 steps with its best at step 100: a relaunch of a best_val run
    keeps the validated ones (best_val chooses among them) beside the newest keep_checkpoints; a run that
    evaluates its final checkpoint keeps only the newest (it left 350-800 of a best_val run, and
    best_val_step then returned 350)."""
    from lie.engines.verl import overrides as verl_overrides
    from lie.stages.checkpoint import best_val_step

    config = small_config(tmp_path / "out", tiny, keep_checkpoints=2, eval_step=eval_step)
    settings = RunSettings.of(Config.of(config), "tiny_gspo_lie")
    rundir = RunDir(tmp_path / "out", "tiny_gspo_lie")
    assert verl_overrides.prepare_resume(Config.of(config), settings, rundir, 1) is False  # claims the folder
    steps = range(50, 850, 50)
    lines = []
    for step in steps:
        verl_checkpoint(rundir.checkpoints, step)
        data = {"actor/pg_loss": 0.1}
        if step % 100 == 0:
            data["val-core/arith-val/acc/mean@1"] = 0.9 if step == 100 else 0.5
        lines.append(json.dumps({"step": step, "data": data}))
    (rundir.checkpoints / "latest_checkpointed_iteration.txt").write_text("800")
    rundir.new_metrics_file().write_text("\n".join(lines) + "\n")
    assert verl_overrides.prepare_resume(Config.of(config), settings, rundir, 1) is False
    kept = sorted(int(p.name.split("_")[-1]) for p in rundir.checkpoints.glob("global_step_*"))
    if eval_step == "best_val":
        assert kept == [100, 200, 300, 400, 500, 600, 700, 750, 800]
        assert best_val_step(rundir) == 100
    else:
        assert kept == [750, 800]


def test_a_verl_run_with_other_settings_starts_afresh_and_keeps_the_old_one(tmp_path, tiny):
    from lie.engines.verl import overrides as verl_overrides

    config = small_config(tmp_path / "out", tiny)
    rundir = RunDir(tmp_path / "out", "tiny_gspo_lie")
    assert (
        verl_overrides.prepare_resume(
            Config.of(config), RunSettings.of(Config.of(config), "tiny_gspo_lie"), rundir, 1
        )
        is False
    )
    verl_checkpoint(rundir.checkpoints, 1)
    (rundir.checkpoints / "latest_checkpointed_iteration.txt").write_text("1")
    rundir.new_metrics_file().write_text('{"step": 1, "data": {}}\n')  # verl logs a step after its save
    rundir.rollouts_dir.mkdir(parents=True)
    (rundir.rollouts_dir / "step-000001.h-1.jsonl").write_text("{}\n")
    (rundir.rollouts_dir / "step-000002.h-1.jsonl").write_text("{}\n")  # killed during step 2
    same = copy.deepcopy(config)
    same["training"]["nnodes"] = 4
    assert (
        verl_overrides.prepare_resume(
            Config.of(same), RunSettings.of(Config.of(same), "tiny_gspo_lie"), rundir, 1
        )
        is False
    )
    assert sorted(p.name for p in rundir.rollouts_dir.iterdir()) == ["step-000001.h-1.jsonl"]
    assert not rundir.superseded.exists()
    other = copy.deepcopy(config)
    other["reward"]["beta"] = 0.3
    time.sleep(1)  # superseded/<time> is per second
    assert (
        verl_overrides.prepare_resume(
            Config.of(other), RunSettings.of(Config.of(other), "tiny_gspo_lie"), rundir, 1
        )
        is False
    )
    (moved,) = rundir.superseded.iterdir()
    assert (moved / "checkpoints" / "global_step_1" / "data.pt").exists()
    assert not rundir.checkpoints.exists() and not rundir.rollouts_dir.exists()
