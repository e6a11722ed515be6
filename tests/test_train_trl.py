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
from small import arithmetic_rows, lie_in_process, paper_config, small_config, write_config, write_parquet

from lie.config import Config, RunSettings
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
    settings = RunSettings.of(Config.of(config), run)
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
    settings = RunSettings.of(Config.of(config), run)
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
    root = trl_train.train(
        Config.of(config), RunSettings.of(Config.of(config), "tiny_gspo_lie"), train_file, tiny, threads=1
    )
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


def _lie_train(config_path, run, *extra):
    """``lie train`` with TRL in a process of its own, to be killed."""
    cmd = [sys.executable, "-m", "lie", "train", run, "--config", str(config_path), "--engine", "trl", *extra]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _prompts(outdir, run):
    keys = ("step", "uid", "prompt_index", "response")
    return [tuple(r[k] for k in keys) for r in read_rollouts(RunDir(outdir, run))]


def _metrics(outdir, run):
    """Per-step metrics less the wall-clock ones (TRL's step_time)."""
    return [{k: v for k, v in m.items() if "time" not in k} for m in read_metrics(RunDir(outdir, run))]


def _weights(outdir, run):
    from safetensors.torch import load_file

    final = json.loads(RunDir(outdir, run).final_json.read_text())["checkpoint"]
    return load_file(f"{final}/model.safetensors")


@pytest.fixture(scope="module")
def four_prompts(tmp_path_factory):
    """Two steps an epoch at train_batch_size 2."""
    return write_parquet(
        tmp_path_factory.mktemp("data") / "arith4.reflen.parquet", arithmetic_rows(4, ref_len=600)
    )


def test_stopped_at_every_checkpoint_of_two_epochs_equals_an_uninterrupted_run(
    tmp_path, tiny, four_prompts, caplog
):
    """Two epochs of two steps, stopped after step 1 (epoch 1), 2 (the epoch's end) and 3 (inside
    epoch 2), each time resumed: the same prompts, responses, metrics and final weights as one launch
    (TRL reshuffles the prompts each epoch; a resume draws that epoch's order, not the first's)."""
    run, data = "tiny_gspo_lie", ("--train-file", str(four_prompts))  # R_len: a gradient every step

    def config(name):
        config = small_config(tmp_path / name, tiny, max_steps=None)
        config["experiments"][run]["epochs"] = 2
        return write_config(tmp_path / f"{name}.yaml", config)

    whole, parts = config("whole"), config("parts")
    train = ("train", run, "--engine", "trl", *data)  # in this process: tests/small.py, lie_in_process
    lie_in_process(caplog, *train, "--config", str(whole))
    rundir = RunDir(tmp_path / "parts", run)
    for stop in (1, 2, 3, None):
        launch = lie_in_process(
            caplog, *train, "--config", str(parts), *(("--stop-after", str(stop)) if stop else ())
        )
        assert ("resuming from" in launch) == (stop != 1)
        assert rundir.final_json.exists() == (stop is None)
        if stop == 1:
            # a kill between a step's rollouts and its checkpoint leaves rollouts of a step to be redone
            stale = {"step": 2, "uid": "stale", "response": "from the killed run"}
            (rundir.rollouts_dir / "step-000002.trl.jsonl").write_text(json.dumps(stale) + "\n")
    prompts = _prompts(tmp_path / "whole", run)
    for epoch in ((1, 2), (3, 4)):  # each epoch draws every prompt once
        assert sorted({p[2] for p in prompts if p[0] in epoch}) == [0, 1, 2, 3]
    assert _prompts(tmp_path / "parts", run) == prompts
    metrics = _metrics(tmp_path / "whole", run)
    assert [m["step"] for m in metrics] == [1, 2, 3, 4]
    assert _metrics(tmp_path / "parts", run) == metrics
    whole_weights, parts_weights = _weights(tmp_path / "whole", run), _weights(tmp_path / "parts", run)
    assert whole_weights.keys() == parts_weights.keys()
    differ = [name for name in whole_weights if not whole_weights[name].equal(parts_weights[name])]
    assert not differ, f"{len(differ)} of {len(whole_weights)} tensors differ: {differ[:3]}"


def test_a_runs_prompt_order_in_an_epoch_is_the_uninterrupted_runs():
    """EpochSampler over TRL's RepeatSampler: its pass in epoch e, in any order and any number of times,
    is the e-th pass of one sampler iterated from its seed (which differs from epoch to epoch)."""
    from trl.trainer.utils import RepeatSampler

    from lie.engines.trl.sampler import EpochSampler

    def repeat():
        return RepeatSampler(range(8), mini_repeat_count=2, batch_size=2, repeat_count=3, seed=7)

    uninterrupted = repeat()
    passes = [list(uninterrupted) for _ in range(4)]
    assert len({tuple(p) for p in passes}) == 4
    sampler = EpochSampler(repeat())
    assert len(sampler) == len(passes[0])
    for epoch in (2, 0, 3, 3, 1):
        sampler.set_epoch(epoch)
        assert list(sampler) == passes[epoch]


def test_killed_mid_run_resumes_from_its_last_checkpoint(tmp_path, tiny, train_file, caplog):
    config = small_config(tmp_path / "out", tiny, max_steps=12, max_response_length=48)
    path = write_config(tmp_path / "config.yaml", config)
    rundir = RunDir(tmp_path / "out", "tiny_grpo")
    proc = _lie_train(path, "tiny_grpo", "--train-file", str(train_file))
    deadline = time.time() + 300
    while not (rundir.checkpoints / "checkpoint-2" / "trainer_state.json").exists():
        assert proc.poll() is None, proc.stderr.read()[-2000:]
        assert time.time() < deadline
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not rundir.final_json.exists()  # killed before the end
    resumed = lie_in_process(caplog, "train", "tiny_grpo", "--config", str(path), "--engine", "trl",
                             "--train-file", str(train_file))  # fmt: skip
    assert "resuming from" in resumed
    steps = [r["step"] for r in read_rollouts(rundir)]
    assert sorted(set(steps)) == list(range(1, 13)) and len(steps) == 12 * 8  # no step twice, none lost
    assert json.loads(rundir.final_json.read_text())["step"] == 12


def test_a_schedule_or_loss_trl_cannot_run_is_one_line(tmp_path):
    """Refused before a model loads, each naming the keys to change: a batch that is not a multiple of
    the mini-batch, fewer prompts than one batch, a loss aggregation TRL has no equivalent of."""
    from dataclasses import replace

    from lie.core.errors import LieError

    # batch 128, mini-batch 32
    settings = RunSettings.of(Config.of(paper_config()), "qwen3-4b-base_dapo_grpo")
    with pytest.raises(
        LieError, match=r"train_batch_size \(128\) must be a multiple of ppo_mini_batch_size \(48\)"
    ):
        trl_train.schedule(replace(settings, ppo_mini_batch_size=48), 17398)
    with pytest.raises(LieError, match="the training set has 100 prompts, fewer than train_batch_size 128"):
        trl_train.schedule(settings, 100)
    sched = trl_train.schedule(settings, 17398)
    with pytest.raises(LieError, match="loss_agg_mode 'seq-mean-token-sum' has no TRL equivalent here"):
        trl_train.grpo_config(replace(settings, loss_agg_mode="seq-mean-token-sum"), sched, tmp_path, True)


def test_the_last_step_is_saved_whatever_save_freq_and_an_unsaved_eval_step_is_one_line(
    tmp_path, tiny, capsys
):
    """save_freq -1 (verl's "no periodic saves"): TRL saves nothing, the engine saves the last step
    itself (sealed, as TRL's are); ``eval_step: 1``, which no checkpoint holds, stops with one line
    naming the key once trained."""
    from lie.cli import main

    train = write_parquet(tmp_path / "train.parquet", arithmetic_rows(6, ref_len=600))
    config = small_config(tmp_path / "out", tiny, max_steps=3, save_freq=-1, eval_step=1)
    cfg = write_config(tmp_path / "c.yaml", config)
    argv = ["train", "tiny_grpo", "--config", str(cfg), "--engine", "trl", "--train-file", str(train)]
    assert main(argv) == 2
    (line,) = [x for x in capsys.readouterr().err.splitlines() if x.startswith("lie train: error:")]
    assert (
        "no checkpoint for training.eval_step=1 (" in line and "choose a step that save_freq divides" in line
    )
    rundir = RunDir(tmp_path / "out", "tiny_grpo")
    saved = sorted(p.name for p in rundir.checkpoints.glob("checkpoint-*"))
    assert saved == ["checkpoint-3"], saved  # one update a step (batch = mini-batch)
    assert trl_train.checkpoint_problem(rundir.checkpoints / "checkpoint-3") is None
    assert not rundir.final_json.exists()
