"""A run of config.yaml on verl 0.9.1: the recipe overlay plus the run's own values as Hydra overrides.

The integration is configuration plus one reward manager (``lie.engines.verl.reward_manager``): no
fork of verl's trainer. What every run shares lives in ``lie_trainer.yaml`` (an overlay on verl's
``ppo_trainer``); :func:`overrides` maps only a run's own settings of config.yaml onto it, and
:func:`compose` composes both as ``main_ppo`` does, so that ``--dry-run``, the tests and the
``verl_config.yaml`` of every launch show exactly what verl runs.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lie.config import grading_limits
from lie.config.identity import settings_hash
from lie.config.layout import Layout
from lie.config.settings import BEST_VAL, FINAL, RunSettings
from lie.config.typed import Config
from lie.core.errors import LieError
from lie.engines.verl import checkpoints as verl_checkpoints
from lie.engines.verl import cpu as verl_cpu  # its top level loads nothing of verl or torch
from lie.formats.jsonl import atomic_output
from lie.formats.runs import RunDir, read_metrics, validation_average

RECIPE_DIR = Path(__file__).parent
RECIPE = "lie_trainer"  # lie_trainer.yaml: defaults [ppo_trainer, _self_]
TRAINER_PLUGIN = "lie.engines.verl.trainer"  # a verl.plugins entry point (pyproject.toml)


@dataclass(frozen=True)
class VerlInputs:
    """Files a run reads: its training set (with L_ref), validation sets, and the initial model."""

    train_file: str
    val_files: tuple[str, ...]
    model_path: str


def _q(value: Any) -> str:
    """A Hydra override value: quoted strings, lists, bools and numbers."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_q(v) for v in value) + "]"
    text = str(value).replace("\\", "\\\\").replace("'", "\\'")
    return f"'{text}'"


def overrides(
    config: Config,
    s: RunSettings,
    inputs: VerlInputs,
    metrics_file: str | None = None,
    device: str = "gpu",
) -> list[str]:
    """A run's own Hydra overrides of the recipe (``lie_trainer.yaml``) for ``main_ppo``, from its
    settings ``s`` (``lie.config.settings``) and the config's other sections.

    ``device="cpu"`` adds what verl's CPU backend needs (``lie.engines.verl.cpu.overrides``) on top
    of the cluster's settings, and nothing else.
    """
    rundir = Layout(config).run_dir(s.run)
    prompt_len, response_len = s.max_prompt_length, s.max_response_length
    token_budget = 3 * (prompt_len + response_len)  # the authors' dynamic-batch budget per GPU

    o: dict[str, Any] = {
        # data
        "data.train_files": [inputs.train_file],
        "data.val_files": list(inputs.val_files),
        "data.max_prompt_length": prompt_len,
        "data.max_response_length": response_len,
        "data.train_batch_size": s.train_batch_size,
        "actor_rollout_ref.actor.entropy_coeff": s.entropy_coeff,
        # the algorithm's loss
        "actor_rollout_ref.actor.policy_loss.loss_mode": s.loss_mode,
        "actor_rollout_ref.actor.loss_agg_mode": s.loss_agg_mode,
        "actor_rollout_ref.actor.clip_ratio_low": s.clip_ratio_low,
        "actor_rollout_ref.actor.clip_ratio_high": s.clip_ratio_high,
        "actor_rollout_ref.actor.clip_ratio_c": s.clip_ratio_c,
        # optimisation
        "actor_rollout_ref.actor.optim.lr": s.lr,
        "actor_rollout_ref.actor.optim.lr_warmup_steps": s.lr_warmup_steps,
        "actor_rollout_ref.actor.optim.weight_decay": s.weight_decay,
        "actor_rollout_ref.actor.optim.clip_grad": s.grad_clip,  # what the FSDP engine reads
        "actor_rollout_ref.actor.grad_clip": s.grad_clip,  # kept equal (in the schema, unread)
        "actor_rollout_ref.actor.ppo_mini_batch_size": s.ppo_mini_batch_size,
        "actor_rollout_ref.actor.ppo_epochs": s.ppo_epochs,
        "actor_rollout_ref.actor.use_dynamic_bsz": s.use_dynamic_bsz,
        "actor_rollout_ref.actor.ppo_max_token_len_per_gpu": token_budget,
        "actor_rollout_ref.rollout.log_prob_use_dynamic_bsz": s.use_dynamic_bsz,
        "actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu": token_budget,
        "actor_rollout_ref.ref.log_prob_use_dynamic_bsz": s.use_dynamic_bsz,
        "actor_rollout_ref.ref.log_prob_max_token_len_per_gpu": token_budget,
        # model
        "actor_rollout_ref.model.path": inputs.model_path,
        "actor_rollout_ref.model.trust_remote_code": config.trust_remote_code,
        # rollouts
        "actor_rollout_ref.rollout.n": s.rollout_n,
        "actor_rollout_ref.rollout.temperature": s.temperature,
        "actor_rollout_ref.rollout.top_p": s.top_p,
        "actor_rollout_ref.rollout.ignore_eos": s.rollout_ignore_eos,  # the preflight's full-length trial
        "actor_rollout_ref.rollout.max_model_len": prompt_len + response_len,
        "actor_rollout_ref.rollout.max_num_batched_tokens": token_budget,
        "actor_rollout_ref.rollout.val_kwargs.temperature": s.val_temperature,
        "actor_rollout_ref.rollout.val_kwargs.top_p": s.top_p,
        "actor_rollout_ref.rollout.val_kwargs.n": 1,
        # the LIE reward manager's knobs
        "+reward.reward_kwargs.validation_sources": list(s.val_sets),
        "+reward.reward_kwargs.log_dir": str(rundir.rollouts_dir.resolve()),
        # the grading executor both engines size alike (lie.config.grading_limits)
        "+reward.reward_kwargs.grade_timeout_s": grading_limits(config)[0],
        "+reward.reward_kwargs.grade_workers": grading_limits(config)[1],
        # trainer
        "trainer.project_name": f"lie-{config.name}",
        "trainer.experiment_name": s.run,
        "trainer.nnodes": s.nnodes,
        "trainer.n_gpus_per_node": s.n_gpus_per_node,
        "trainer.total_epochs": s.epochs,
        "trainer.total_training_steps": s.max_steps,
        "trainer.save_freq": s.save_freq,
        # a save ahead of the Slurm job's end (workflow/scripts/ray_on_slurm.sh exports it)
        "trainer.esi_redundant_time": config.cluster.esi_redundant_time_s,
        # verl prunes within a launch; a fixed eval_step must survive, so then nothing is pruned
        "trainer.max_actor_ckpt_to_keep": s.keep_checkpoints if s.final_eval else None,
        "trainer.test_freq": s.test_freq,
        "trainer.val_before_train": False,
        "trainer.default_local_dir": str(rundir.checkpoints.resolve()),
        "trainer.validation_data_dir": str((rundir.root / "validation").resolve()),
        "trainer.logger": list(s.logger),
    }
    if s.seed is not None:  # 0 is a seed; unset: the recipe's data.seed (lie_trainer.yaml)
        o["data.seed"] = s.seed
    thinking = config.enable_thinking(s.model)
    if thinking is not None:  # Qwen3-4B: thinking off, as the authors' +data.enable_thinking=False
        o["+data.apply_chat_template_kwargs.enable_thinking"] = bool(thinking)
    for key, value in s.reward.as_dict().items():
        o[f"+reward.reward_kwargs.lie.{key}"] = value
    if device == "cpu":
        o.update(verl_cpu.overrides(s.nnodes, s.n_gpus_per_node, s.cpu_rollout))
    else:  # the cluster's, but for a GPU rollout other than vLLM (nothing for vllm)
        o.update(verl_cpu.gpu_rollout_overrides(s.gpu_rollout))
    if metrics_file is not None:
        o["+ray_kwargs.ray_init.runtime_env.env_vars.VERL_FILE_LOGGER_PATH"] = metrics_file
    return [f"{k}={_q(v)}" for k, v in o.items()]


COMPLETED = "lie_completed.json"  # in checkpoints/: training finished with these settings


def launch_ranks(s: RunSettings) -> int:
    """The FSDP ranks of a launch (verl names its checkpoint shards by this number)."""
    return s.gpus  # nnodes x n_gpus_per_node on a CPU too (lie.engines.verl.cpu.overrides)


def prepare_resume(config: Config, s: RunSettings, rundir: RunDir, ranks: int) -> bool:
    """Before a launch of ``ranks`` FSDP ranks: keep the run folder only for these settings, repair
    verl's checkpoints after a kill, check that verl can load them at this world size, drop rollouts
    of the steps that will be redone. True when training already finished."""
    digest = settings_hash(config, s.run)
    rundir.claim(digest)
    if verl_checkpoints.completed(rundir.checkpoints / COMPLETED, digest):
        return True
    # what a relaunch prunes beyond the newest keep_checkpoints: never a fixed eval_step, nor for
    # best_val a checkpoint that validated (its choice is among them; unknown without the file logger:
    # then nothing is pruned)
    metrics = read_metrics(rundir) if "file" in s.logger else None
    logged = {m["step"] for m in metrics} if metrics is not None else None
    keep, protect = s.keep_checkpoints, frozenset({s.fixed_step} if s.fixed_step is not None else ())
    if s.eval_step == BEST_VAL:
        validated = (
            {m["step"] for m in metrics if validation_average(m) is not None} if metrics is not None else None
        )
        keep, protect = (keep, frozenset(validated)) if validated is not None else (None, protect)
    latest = verl_checkpoints.repair(rundir, keep, protect, logged)
    if latest is not None and not _same_world_size(s, rundir, latest, ranks):
        latest = None
    rundir.trim_rollouts_after(latest or 0)
    return False


def _same_world_size(s: RunSettings, rundir: RunDir, step: int, ranks: int) -> bool:
    """verl resumes only from shards of its own world size: a checkpoint of another one stops the
    launch with one line, or with ``training.world_size_change: restart`` the run's outputs are set
    aside (False: start afresh)."""
    path = rundir.checkpoints / f"global_step_{step}"
    saved = verl_checkpoints.saved_world_size(path)
    if saved is None or saved == ranks:
        return True
    if s.world_size_change != "restart":
        raise LieError(
            f"run {rundir.run}: {path} was saved by {saved} FSDP ranks and this launch has {ranks}, and verl "
            f"resumes only at the same world size: launch it on {saved} GPUs again (training.nnodes x "
            "n_gpus_per_node) to resume, or set training.world_size_change: restart to set its outputs "
            "aside and train afresh"
        )
    rundir.supersede(f"its checkpoints were saved by {saved} FSDP ranks, this launch has {ranks}")
    return False


def mark_complete(config: Config, run: str, rundir: RunDir) -> None:
    """verl finished: record it, so that a rerun (e.g. for another eval_step) does not relaunch it."""
    step = verl_checkpoints.tracked_step(rundir.checkpoints)
    verl_checkpoints.seal_completed(
        rundir.checkpoints / COMPLETED, step, {"settings": settings_hash(config, run)}
    )


def write_composed(override_list: list[str], path: Path) -> None:
    """verl's whole configuration of this launch, as main_ppo will compose it, into the run folder."""
    from omegaconf import OmegaConf

    composed = compose(override_list)
    check_composed(composed)
    with atomic_output(path) as out:
        out.write(OmegaConf.to_yaml(composed))


def compose(override_list: list[str]):
    """The recipe (verl's ``ppo_trainer.yaml`` + ``lie_trainer.yaml``) composed with the overrides, as main_ppo does."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(RECIPE_DIR), version_base=None):
        return hydra_compose(config_name=RECIPE, overrides=override_list)


def check_composed(cfg: Any) -> None:
    """verl's own config validation (the checks main_ppo runs before starting workers), and that
    verl will run lie's trainer for the composed ``trainer.v1.trainer_mode``."""
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.trainer.ppo.v1.trainer_base import TRAINER_REGISTRY
    from verl.utils.config import validate_config

    validate_config(cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))
    trainer = TRAINER_REGISTRY.get(cfg.trainer.v1.trainer_mode)
    if getattr(trainer, "__module__", None) != TRAINER_PLUGIN:
        raise LieError(
            f"verl would run {getattr(trainer, '__name__', None)}, not {TRAINER_PLUGIN}.LIETrainer: "
            "reinstall lie (`pip install -e .`, or rebuild the image) so that its verl.plugins entry "
            "point is installed, and leave VERL_USE_EXTERNAL_PLUGINS unset"
        )


def command(override_list: list[str], python: str | None = None, hydra_dir: Path | None = None) -> list[str]:
    """``python -m verl.trainer.main_ppo`` with the overrides; Hydra's own log and config copy go to
    ``hydra_dir`` (the run folder) instead of ``./outputs/<date>`` of wherever the job started."""
    hydra = [f"hydra.run.dir={_q(str(hydra_dir))}"] if hydra_dir is not None else []
    recipe = ["--config-path", str(RECIPE_DIR), "--config-name", RECIPE]
    return [python or sys.executable, "-m", "verl.trainer.main_ppo", *recipe, *override_list, *hydra]


def final_checkpoint(rundir: RunDir, eval_step: str | int) -> Path:
    """The checkpoint to evaluate: the last one saved (``final``), or ``global_step_<eval_step>``."""
    ckpts = rundir.checkpoints
    if eval_step != FINAL:
        path = ckpts / f"global_step_{int(eval_step)}"
    else:
        if not (ckpts / verl_checkpoints.TRACKER).exists():
            raise LieError(f"{ckpts}: no {verl_checkpoints.TRACKER}; has the run saved a checkpoint?")
        step = verl_checkpoints.tracked_step(ckpts)
        if step is None:
            raise LieError(
                f"{ckpts}: {verl_checkpoints.TRACKER} names no step (verl writes one integer); rerun the "
                "train job to repair it"
            )
        path = ckpts / f"global_step_{step}"
    return path
