"""The TRL engine on a tiny model: the same settings as verl, the shared output schema, resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
import yaml
from small import arithmetic_rows, paper_config, small_config, write_config, write_parquet

from lie.config import RunSettings
from lie.engines.trl import train as trl_train
from lie.formats.runs import ROLLOUT_FIELDS, RunDir, read_metrics, read_rollouts

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tiny(arith_tiny):
    return arith_tiny  # built once per pytest run (tests/conftest.py)


@pytest.fixture(scope="module")
def train_file(tmp_path_factory):
    return write_parquet(
        tmp_path_factory.mktemp("data") / "arith.reflen.parquet", arithmetic_rows(8, ref_len=600)
    )


@pytest.mark.parametrize(
    "run, level, loss_type, eps_high",
    [
        ("qwen3-4b-base_dapo_gspo_lie", "sequence", "grpo", 4e-4),
        ("qwen3-4b-base_dapo_grpo", "token", "dapo", 0.2),
        ("qwen3-4b-base_dapo_grpo-clip-higher_lie", "token", "dapo", 0.28),
    ],
)
def test_paper_runs_map_onto_grpo_config(tmp_path, run, level, loss_type, eps_high):
    config = paper_config()
    settings = RunSettings.of(config, run)
    sched = trl_train.schedule(settings, num_prompts=17398)
    assert (sched.steps_per_generation, sched.rollout_steps) == (4, settings.epochs * (17398 // 128))
    args = trl_train.grpo_config(settings, sched, tmp_path, use_cpu=True)
    assert (args.importance_sampling_level, args.loss_type, args.epsilon_high) == (level, loss_type, eps_high)
    assert args.beta == 0.0 and args.delta == 10.0 and args.num_generations == 8
    assert args.per_device_train_batch_size == 32 * 8 and args.steps_per_generation == 4
    assert args.max_completion_length == 8192 and args.temperature == 1.0 and args.top_p == 1.0
    assert args.learning_rate == 1e-6 and args.warmup_steps == 10 * 4 and args.max_grad_norm == 1.0
    assert args.weight_decay == 0.1 and args.scale_rewards == "group" and args.save_steps == 50 * 4


@pytest.mark.parametrize("seed", [0, 1])
def test_a_runs_seed_reaches_grpo_config_as_written(tmp_path, capsys, seed):
    """The run's seed, 0 included, is GRPOConfig's seed: built by the engine's config builder, and
    as `lie train --engine trl --dry-run` prints it."""
    from lie.cli import main

    config = paper_config()
    run = "qwen3-4b-base_dapo_grpo"
    config["experiments"][run]["seed"] = seed
    settings = RunSettings.of(config, run)
    args = trl_train.grpo_config(
        settings, trl_train.schedule(settings, num_prompts=256), tmp_path, use_cpu=True
    )
    assert args.seed == seed
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    assert main(["train", run, "--config", str(path), "--engine", "trl", "--dry-run"]) == 0
    assert f"\nseed: {seed}\n" in "\n" + capsys.readouterr().out


def test_trains_a_tiny_model_into_the_shared_layout(tmp_path, tiny, train_file):
    config = small_config(tmp_path / "out", tiny)
    root = trl_train.train(config, RunSettings.of(config, "tiny_gspo_lie"), train_file, tiny, threads=1)
    rundir = RunDir(tmp_path / "out", "tiny_gspo_lie")
    assert root == rundir.root
    metrics = read_metrics(rundir)
    assert [m["step"] for m in metrics] == [1, 2, 3]
    for m in metrics:
        assert {
            "response_length/mean",
            "critic/score/mean",
            "actor/entropy",
            "actor/pg_loss",
            "lie/c_context",
        } <= set(m)
    rollouts = read_rollouts(rundir)
    assert len(rollouts) == 3 * 2 * 4  # steps x prompts x samples
    assert all(set(ROLLOUT_FIELDS) <= set(r) for r in rollouts)
    assert {r["step"] for r in rollouts} == {1, 2, 3}
    assert all(r["ref_len"] == 600 and 1 <= r["num_tokens"] <= 24 for r in rollouts)
    # a random model's answers are mostly wrong and far shorter than L_ref - 500: the code's R_len
    wrong = [r for r in rollouts if r["acc"] == 0.0]
    assert len(wrong) > len(rollouts) / 2
    for r in rollouts:
        expected = 0.0 if r["acc"] else -3.33e-5 * (1 + 500 / 600) * (100 - r["num_tokens"])
        assert r["r_len"] == pytest.approx(expected, rel=1e-12)
        assert r["reward"] == pytest.approx(r["acc"] + r["r_len"] + r["r_red"], abs=1e-15)
    final = json.loads(rundir.final_json.read_text())
    assert final["engine"] == "trl" and final["step"] == 3 and final["checkpoint"].endswith("checkpoint-3")
    # every checkpoint sealed last, its weights with the umask's modes (TRL's save leaves 0600; issue 21)
    from lie.engines.trl.train import checkpoint_problem
    from lie.formats.jsonl import default_mode

    for checkpoint in rundir.checkpoints.glob("checkpoint-*"):
        assert checkpoint_problem(checkpoint) is None
        assert (checkpoint / "model.safetensors").stat().st_mode & 0o777 == default_mode()
    # merge: a Hugging Face folder that loads
    from lie.cli import main

    cfg_path = write_config(tmp_path / "config.yaml", config)
    assert main(["merge", "tiny_gspo_lie", "--config", str(cfg_path)]) == 0
    from transformers import AutoModelForCausalLM, AutoTokenizer

    merged = tmp_path / "out" / "models" / "tiny_gspo_lie"
    AutoModelForCausalLM.from_pretrained(merged)
    assert AutoTokenizer.from_pretrained(merged).eos_token == "<|im_end|>"


def _lie_train(config_path, run, *extra, wait=True):
    cmd = [sys.executable, "-m", "lie", "train", run, "--config", str(config_path), "--engine", "trl", *extra]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    if wait:
        return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _responses(outdir, run):
    return [(r["step"], r["uid"], r["response"]) for r in read_rollouts(RunDir(outdir, run))]


def test_stopped_then_resumed_equals_an_uninterrupted_run(tmp_path, tiny, train_file):
    whole = write_config(tmp_path / "whole.yaml", small_config(tmp_path / "whole", tiny))
    parts = write_config(tmp_path / "parts.yaml", small_config(tmp_path / "parts", tiny))
    assert _lie_train(whole, "tiny_grpo", "--train-file", str(train_file)).returncode == 0
    first = _lie_train(parts, "tiny_grpo", "--train-file", str(train_file), "--stop-after", "1")
    assert first.returncode == 0, first.stderr[-2000:]
    rundir = RunDir(tmp_path / "parts", "tiny_grpo")
    assert not rundir.final_json.exists()
    # a kill between a step's rollouts and its checkpoint leaves rollouts of a step to be redone
    stale = rundir.rollouts_dir / "step-000002.trl.jsonl"
    stale.write_text(json.dumps({"step": 2, "uid": "stale", "response": "from the killed run"}) + "\n")
    second = _lie_train(parts, "tiny_grpo", "--train-file", str(train_file))
    assert second.returncode == 0, second.stderr[-2000:]
    assert "resuming from" in second.stderr
    assert _responses(tmp_path / "parts", "tiny_grpo") == _responses(tmp_path / "whole", "tiny_grpo")


def test_killed_mid_run_resumes_from_its_last_checkpoint(tmp_path, tiny, train_file):
    config = small_config(tmp_path / "out", tiny, max_steps=12, max_response_length=48)
    path = write_config(tmp_path / "config.yaml", config)
    rundir = RunDir(tmp_path / "out", "tiny_grpo")
    proc = _lie_train(path, "tiny_grpo", "--train-file", str(train_file), wait=False)
    deadline = time.time() + 300
    while not (rundir.checkpoints / "checkpoint-2" / "trainer_state.json").exists():
        assert proc.poll() is None, proc.stderr.read()[-2000:]
        assert time.time() < deadline
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not rundir.final_json.exists()  # killed before the end
    resumed = _lie_train(path, "tiny_grpo", "--train-file", str(train_file))
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert "resuming from" in resumed.stderr
    steps = [r["step"] for r in read_rollouts(rundir)]
    assert sorted(set(steps)) == list(range(1, 13)) and len(steps) == 12 * 8  # no step twice, none lost
    assert json.loads(rundir.final_json.read_text())["step"] == 12
