"""Training (``lie train RUN``): one run of the config with its engine, or its composed settings
(``--dry-run``, :func:`composition`).

verl on GPUs (Ray, vLLM, several nodes) or on its CPU backend where no GPU is visible
(``lie.engines.verl.cpu``); TRL on a CPU or one GPU. A run's engine is its own ``engine`` key, else
``engines.train``. Inputs default to the pipeline's layout (the Snakemake rules pass the same
paths); outputs go to ``<outdir>/runs/<run>/`` (``lie.formats.runs``).
"""

from __future__ import annotations

import logging
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from lie.config.layout import Layout
from lie.config.sections import vllm_cpu_venv
from lie.config.settings import RunSettings
from lie.config.typed import Config
from lie.core.errors import LieError
from lie.engines.gpu_env import check_driver
from lie.engines.trl import train as trl_train  # its top level loads nothing of torch, TRL or pyarrow
from lie.engines.verl import cpu as verl_cpu  # its top level loads nothing of verl or torch
from lie.engines.verl import overrides as verl_overrides
from lie.engines.verl.overrides import VerlInputs
from lie.formats.model_folder import check_model_folder
from lie.formats.runs import inputs_digest, write_final, write_json
from lie.stages.checkpoint import BEST_VAL, evaluated_step

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainRequest:
    """What ``lie train`` was asked: the run, and any input or engine choice the layout would not make."""

    run: str
    engine: str | None = None
    device: str = "auto"  # verl: gpu, cpu, or auto (cpu when no GPU is visible)
    train_file: str | None = None
    val_files: tuple[str, ...] | None = None
    model: str | None = None
    stop_after: int | None = None  # TRL: stop after this many steps (a rerun resumes)
    threads: int | None = None  # TRL on a CPU: torch threads
    nnodes: int | None = None  # this launch's nodes over training.nnodes (the Slurm launcher's allocation)


def settings_of(config: Config, request: TrainRequest) -> RunSettings:
    """The run's settings (``lie.config.settings``) with the request's engine and nodes over the config's."""
    settings = config.run(request.run)
    changes = {"engine": request.engine, "nnodes": request.nnodes}
    return settings.replace(**{key: value for key, value in changes.items() if value is not None})


def verl_inputs(config: Config, request: TrainRequest) -> VerlInputs:
    """The layout's files for the run, or the request's; absolute (Ray workers on other nodes read them)."""
    layout = Layout(config)
    s = config.run(request.run)
    vals = tuple(str(layout.dataset_file(name)) for name in s.val_sets)
    return VerlInputs(
        train_file=_absolute(request.train_file or str(layout.reflen_file(s.data, s.model))),
        val_files=tuple(_absolute(p) for p in (request.val_files or vals)),
        model_path=_absolute(request.model or str(layout.init_model(request.run))),
    )


def _absolute(path: str) -> str:
    hub_id = not Path(path).exists() and path.count("/") == 1 and not path.startswith((".", "/"))
    return path if hub_id else str(Path(path).resolve())


def verl_device(request: TrainRequest) -> str:
    return request.device if request.device != "auto" else ("gpu" if verl_cpu.gpu_visible() else "cpu")


def verl_python(config: Config, settings: RunSettings, device: str) -> str | None:
    """The Python that runs ``main_ppo``: this one, but for a CPU run with ``cpu_rollout: vllm`` the
    environment of vLLM's CPU build (``engines.vllm_cpu.venv``), which holds verl and vLLM together."""
    if device != "cpu" or settings.cpu_rollout != "vllm":
        return None
    venv = vllm_cpu_venv(config)
    if venv is None:
        raise LieError(
            f"run {settings.run}: cpu_rollout vllm needs engines.vllm_cpu.venv, the environment of vLLM's "
            "CPU build (make venv-vllm)"
        )
    python = venv / "bin" / "python"
    if not python.exists():
        raise LieError(f"run {settings.run}: cpu_rollout vllm: {python} does not exist; run `make venv-vllm`")
    return str(python)


def train(config: Config, request: TrainRequest) -> Path:
    """Train the run to its end (resuming from its last complete checkpoint); return its folder.

    One command at a time per run folder: a second ``lie train RUN`` stops, naming the first.
    """
    settings = settings_of(config, request)
    with Layout(config).run_dir(request.run).lock(f"train {request.run}"):
        if settings.engine == "verl":
            return _train_verl(config, settings, request)
        return _train_trl(config, settings, request)


def missing_input(config: Config, run: str, path: str | Path) -> LieError:
    """A run's missing input, with the one command that builds it from the config ``lie train`` was given
    (Snakemake takes the file as its target; a path inside the working folder is given relative to it)."""
    target = Path(path)
    if target.is_absolute() and target.is_relative_to(Path.cwd()):
        target = target.relative_to(Path.cwd())
    return LieError(
        f"run {run}: input {path} does not exist; build it first: "
        f"lie snakemake --configfile {config.source} --cores 2 {target}"
    )


def _train_verl(config: Config, settings: RunSettings, request: TrainRequest) -> Path:
    run, inputs, device = request.run, verl_inputs(config, request), verl_device(request)
    rundir = Layout(config).run_dir(run)
    for path in (inputs.train_file, *inputs.val_files):
        if not Path(path).exists():
            raise missing_input(config, run, path)
    if device == "gpu":
        check_driver()
    check_model_folder(
        inputs.model_path
    )  # before verl starts (after the driver): one line, not verl's traceback
    ranks = verl_overrides.launch_ranks(settings)
    rundir.claim_inputs(inputs_digest(inputs.train_file, inputs.model_path))  # other inputs: afresh
    if not verl_overrides.prepare_resume(config, settings, rundir, ranks):
        overrides = verl_overrides.overrides(
            config, settings, inputs, metrics_file=str(rundir.new_metrics_file().resolve()), device=device
        )
        verl_overrides.write_composed(overrides, rundir.verl_config)
        python = verl_python(config, settings, device)
        cmd = verl_overrides.command(overrides, python=python, hydra_dir=(rundir.root / "hydra").resolve())
        rollout = settings.cpu_rollout if device == "cpu" else settings.gpu_rollout  # which server sampled
        write_json(
            rundir.run_json,
            {"engine": "verl", "device": device, "rollout": rollout, "run": run, "settings": settings.as_dict(),
             "command": cmd},
        )  # fmt: skip
        env = {**os.environ, "HYDRA_FULL_ERROR": "1"}
        if device == "cpu":
            env = verl_cpu.environment(env)
        elif settings.gpu_rollout != "vllm":
            env = verl_cpu.with_module(env, verl_cpu.ROLLOUT_PLUGIN)
        log.info("running verl (%s): %s", device, " ".join(cmd[:4]) + " ...")
        code = subprocess.run(cmd, env=env).returncode
        if code != 0:
            raise LieError(
                f"run {run}: verl exited with status {code}; rerun to resume from the last checkpoint"
            )
        verl_overrides.mark_complete(config, run, rundir)
    eval_step = evaluated_step(rundir, settings.eval_step)  # best_val: from its metrics
    checkpoint = verl_overrides.final_checkpoint(rundir, eval_step)
    step = int(checkpoint.name.rsplit("_", 1)[1])
    write_final(rundir, "verl", checkpoint, step)
    return rundir.root


def _train_trl(config: Config, settings: RunSettings, request: TrainRequest) -> Path:
    if settings.eval_step == BEST_VAL:
        raise LieError(
            f"run {request.run}: training.eval_step best_val picks a checkpoint by in-training validation, "
            "which only verl runs have; set it to final or a step, or train this run with verl"
        )

    layout = Layout(config)
    train_file = Path(request.train_file or layout.reflen_file(settings.data, settings.model))
    model = Path(request.model or layout.init_model(request.run))
    for path in (train_file, model):
        if not path.exists():
            raise missing_input(config, request.run, path)
    threads = request.threads or int(os.environ.get("OMP_NUM_THREADS", "1") or 1)
    return trl_train.train(
        config, settings, train_file, model, stop_after=request.stop_after, threads=threads
    )


def composition(config: Config, request: TrainRequest) -> str:
    """What the engine would run, composed and checked, as text (``lie train --dry-run``); nothing runs."""
    settings = settings_of(config, request)
    if settings.engine == "verl":
        return _verl_composition(config, settings, request)
    return _trl_composition(config, settings, request)


def _verl_composition(config: Config, settings: RunSettings, request: TrainRequest) -> str:
    from omegaconf import OmegaConf

    device = verl_device(request)
    rundir = Layout(config).run_dir(request.run)
    overrides = verl_overrides.overrides(
        config, settings, verl_inputs(config, request), metrics_file=str(rundir.metrics_dir / "launch.jsonl"),
        device=device,
    )  # fmt: skip
    composed = verl_overrides.compose(overrides)
    verl_overrides.check_composed(composed)
    lines = [f"# device: {device}"]
    if device == "cpu":
        lines.append(
            "# the CPU backend's overrides (lie.engines.verl.cpu.overrides), on top of the cluster's"
        )
        cpu = verl_cpu.overrides(settings.nnodes, settings.n_gpus_per_node, settings.cpu_rollout)
        lines += [f"#   {k}={v}" for k, v in cpu.items()]
    for title, section in (("reward (verl 0.9 `reward` group, as composed)", composed.reward),
                           ("data", composed.data), ("actor_rollout_ref.actor", composed.actor_rollout_ref.actor)):  # fmt: skip
        lines += [f"# {title}", OmegaConf.to_yaml(section)]
    python = verl_python(config, settings, device)
    lines += ["# command", " ".join(verl_overrides.command(overrides, python=python))]
    return "\n".join(lines)


TRL_KEYS = ("seed", "importance_sampling_level", "loss_type", "epsilon", "epsilon_high", "delta", "beta",
            "num_generations", "per_device_train_batch_size", "steps_per_generation", "num_iterations",
            "temperature", "top_p", "max_completion_length", "learning_rate", "warmup_steps",
            "weight_decay", "max_grad_norm", "scale_rewards")  # fmt: skip


def _trl_composition(config: Config, settings: RunSettings, request: TrainRequest) -> str:
    sched = trl_train.Schedule(
        settings.train_batch_size // settings.ppo_mini_batch_size, settings.ppo_epochs, 1
    )
    cfg = trl_train.grpo_config(
        settings, sched, Layout(config).run_dir(request.run).checkpoints, use_cpu=True
    )
    return "\n".join(f"{key}: {getattr(cfg, key)}" for key in TRL_KEYS)
