"""The evaluation's switches: which checkpoint (``training.eval_step: best_val``) and the thinking
flag per model (``evaluation.enable_thinking``), through the doors the pipeline uses.

best_val reads a run folder in verl's own layout (metrics lines as verl's file logger writes them,
``global_step_N`` folders as verl saves them); the thinking switch reaches the generate jobs that
Snakemake plans for the smoke configuration (a dry run that prints the commands).
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from small import REPO

from lie.config import Config, validate_config
from lie.core.errors import LieError
from lie.formats.runs import RunDir
from lie.stages.checkpoint import best_val_step, evaluated_step, validation_average
from lie.stages.train import TrainRequest, train

SMOKE = REPO / "workflow" / "configs" / "smoke.yaml"


def verl_run(
    root: Path, val: dict[int, dict[str, float]], saved: list[int], torn: tuple[int, ...] = ()
) -> RunDir:
    """A run folder as verl leaves it: per-step metrics (validation at some steps) and checkpoints."""
    rundir = RunDir(root, "run")
    path = rundir.new_metrics_file()
    lines = [{"step": s, "data": {"actor/pg_loss": 0.1, **val.get(s, {})}} for s in range(1, 9)]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    for step in saved:
        folder = rundir.checkpoints / f"global_step_{step}"
        (folder / "actor").mkdir(parents=True)
        if step not in torn:
            (folder / "actor" / "model.pt").write_bytes(b"x")
        (folder / "data.pt").write_bytes(b"x")
    return rundir


def acc(**by_set: float) -> dict[str, float]:
    return {f"val-core/{name}/acc/mean@1": value for name, value in by_set.items()}


def test_best_val_is_the_kept_checkpoint_with_the_best_validation_average(tmp_path):
    val = {
        2: acc(math500=0.40, aime24=0.10),  # 0.25
        4: acc(math500=0.50, aime24=0.30),  # 0.40: the best that was saved and kept
        5: acc(math500=0.90, aime24=0.90),  # better, but no checkpoint at step 5
        6: acc(math500=0.60, aime24=0.20),  # 0.40 again: a later tie does not replace the best
        8: acc(math500=0.99, aime24=0.99),  # its checkpoint is torn (a killed save)
    }
    rundir = verl_run(tmp_path, val, saved=[2, 4, 6, 8], torn=(8,))
    assert validation_average({"val-core/a/acc/mean@4": 0.5, "val-aux/a/acc/mean@4": 0.0, "x": 1}) == 0.5
    assert best_val_step(rundir) == 4
    assert evaluated_step(rundir, "best_val") == 4
    assert evaluated_step(rundir, "final") == "final" and evaluated_step(rundir, 6) == 6


def test_best_val_without_a_validated_checkpoint_says_what_to_change(tmp_path):
    rundir = verl_run(tmp_path, {3: acc(math500=0.5)}, saved=[2, 4])
    with pytest.raises(
        LieError, match=r"validated steps \[3\] .*checkpoints \[2, 4\] .*test_freq a multiple"
    ):
        best_val_step(rundir)


def smoke_config() -> dict:
    return yaml.safe_load(SMOKE.read_text(encoding="utf-8"))


def test_best_val_is_a_valid_setting_and_trl_runs_refuse_it(tmp_path):
    config = smoke_config()
    config["training"]["eval_step"] = "best_val"
    config["outdir"] = str(tmp_path)
    validate_config(config)
    with pytest.raises(LieError, match="run smoke_grpo: training.eval_step best_val .* only verl runs have"):
        train(Config.of(config), TrainRequest("smoke_grpo", engine="trl"))


def planned_generate_commands(tmp_path: Path, thinking: dict) -> list[str]:
    root = tmp_path / "wf"
    root.mkdir(parents=True)
    for name in ("Snakefile", "workflow"):
        os.symlink(REPO / name, root / name)
    config = smoke_config()
    config["outdir"] = str(root / "results")
    config["evaluation"]["enable_thinking"] = thinking
    (root / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-n", "-p", "--cores", "1"], cwd=root, env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [line for line in proc.stdout.splitlines() if " lie generate " in line]


def test_the_thinking_switch_reaches_the_smoke_runs_generate_jobs(tmp_path):
    commands = planned_generate_commands(tmp_path, {"tiny": False})
    assert len(commands) >= 10  # every smoke run and the base model, on each benchmark
    assert all("--enable-thinking false" in c for c in commands)
    default = planned_generate_commands(tmp_path / "default", {})  # the model's entry: null, not passed
    assert default and not any("--enable-thinking" in c for c in default)


def test_a_folder_gets_the_thinking_flag_the_dag_gives_its_model_for_every_family(tmp_path):
    """The paper's DAG as planned: each generate job's --model folder, handed to `lie generate`
    without --enable-thinking, gets the flag the job passes; so does the folder moved elsewhere
    with its merge record (`lie merge` names the run and its model)."""
    from lie.formats.outputs import OWNER
    from lie.stages.generate import evaluation_thinking

    config = yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8"))
    config["outdir"] = str(tmp_path / "out")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    cmd = [sys.executable, "-m", "snakemake", "--configfile", str(REPO / "config.yaml"), "-n", "-p",
           "--cores", "1", "--config", f"outdir={config['outdir']}"]  # fmt: skip
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    planned: dict[str, bool | None] = {}
    for line in proc.stdout.splitlines():
        if " lie generate " in line:
            words = line.split()
            flag = words[words.index("--enable-thinking") + 1] if "--enable-thinking" in words else None
            planned[words[words.index("--model") + 1]] = None if flag is None else flag == "true"
    families = {config["experiments"][Path(f).name]["model"] for f in planned if "/models/" in f}
    assert {"qwen3-4b-base", "qwen3-4b", "octothinker-3b"} <= families and False in planned.values()
    moved = tmp_path / "moved"
    for folder, flag in planned.items():
        assert evaluation_thinking(Config.of(config), folder) == flag, folder
        if "/models/" in folder:  # a run's merged model, copied out of the outdir with its record
            run = Path(folder).name
            copy = moved / run
            copy.mkdir(parents=True)
            record = {"command": "merge", "run": run, "model": config["experiments"][run]["model"]}
            (copy / OWNER).write_text(json.dumps(record), encoding="utf-8")
            assert evaluation_thinking(Config.of(config), str(copy)) == flag, run
    from lie.stages.generate import config_model_of

    assert config_model_of(Config.of(config), "qwen3-4b") == "qwen3-4b"  # --model by its config name
    assert config_model_of(Config.of(config), str(tmp_path / "elsewhere")) is None  # no model of this config


def test_equal_steps_evaluates_lie_and_its_ablations_after_the_baselines_epochs():
    from lie.config.settings import EpochStep

    config = yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8"))
    assert config["evaluation"]["equal_steps"] is False  # the authors' comparison, as trained
    r = "qwen3-4b-base_dapo_"
    assert Config.of(config).run(r + "gspo_lie").eval_step == "final"
    config["evaluation"]["equal_steps"] = True
    config["runs"] = [
        r + "gspo",
        r + "gspo_lie",
        r + "gspo_len-only",
        r + "gspo_lie_theta5",
        "qwen3-4b_polaris_gspo_lie",
    ]
    validate_config(config)
    typed = Config.of(config)
    for run in (r + "gspo_lie", r + "gspo_len-only", r + "gspo_lie_theta5"):
        step = typed.run(run).eval_step
        assert (
            isinstance(step, EpochStep)
            and (step.epochs, step.of) == (10, 15)
            and step == "after 10 of 15 epochs"
        )
        assert (
            typed.run(run).keep_checkpoints is None and not typed.run(run).final_eval
        )  # verl keeps them all
    assert typed.run(r + "gspo").eval_step == "final" and typed.run(r + "gspo").keep_checkpoints == 10
    assert typed.run("qwen3-4b_polaris_gspo_lie").eval_step == "final"  # 10 epochs, as its baseline
    # what it cannot honour is one line naming the fix
    for change, fix in ((dict(runs=[r + "gspo_lie", r + "gspo_lie_12k"]), "the continual stage .*_12k starts from"),
                        (dict(eval_step="best_val"), "training.eval_step is 'best_val': set it to final")):  # fmt: skip
        broken = copy.deepcopy(config)
        broken["runs"] = change.get("runs", broken["runs"])
        broken["training"]["eval_step"] = change.get("eval_step", "final")
        with pytest.raises(
            LieError,
            match=f"evaluation.equal_steps evaluates run {r}gspo_lie after {r}gspo's 10 epochs, but {fix}",
        ):
            Config.of(broken).run(r + "gspo_lie")


def test_equal_steps_picks_the_checkpoint_at_the_baselines_step_count(tmp_path):
    from lie.config.settings import EpochStep

    rundir = verl_run(tmp_path / "a", {}, saved=[2, 4, 6])  # 3 epochs of 2 steps, a checkpoint every 2
    assert evaluated_step(rundir, EpochStep(2, 3)) == 4
    gap = verl_run(tmp_path / "b", {}, saved=[3, 6])
    with pytest.raises(
        LieError, match=r"step 4 \(after 2 of 3 epochs\), which has no kept checkpoint .*save_freq"
    ):
        evaluated_step(gap, EpochStep(2, 3))
    short = verl_run(tmp_path / "c", {}, saved=[2, 4])  # stopped after step 4 of 6
    with pytest.raises(LieError, match="step 4, is not the end of 3 whole epochs"):
        evaluated_step(short, EpochStep(2, 3))
