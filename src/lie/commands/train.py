"""``lie train RUN``: one run of config.yaml, with verl (GPU, Ray, multi-node) or TRL (CPU/one GPU).

Examples:
  lie train qwen3-4b-base_dapo_gspo_lie --config config.yaml --dry-run   # compose verl's config, print it
  lie train qwen3-4b-base_dapo_gspo_lie --config config.yaml             # run verl on this node
  lie train smoke_gspo_lie --config workflow/configs/smoke.yaml --engine trl
Inputs default to the pipeline's layout (lie.config.layout); outputs go to <outdir>/runs/<run>/.
"""

from __future__ import annotations

import argparse
import logging
import os
import subprocess
from pathlib import Path

from lie.core.errors import LieError
from lie.formats.runs import write_json

log = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", help="a run name of config.yaml's experiments")
    parser.add_argument("--config", default="config.yaml")
    parser.add_argument("--engine", choices=["verl", "trl"], help="default: engines.train of the config")
    parser.add_argument("--dry-run", action="store_true", help="compose and print the engine's settings only")
    parser.add_argument(
        "--device",
        choices=["auto", "gpu", "cpu"],
        default="auto",
        help="verl: GPUs, or verl's CPU backend (lie.engines.verl.cpu); auto: cpu when no GPU is visible",
    )
    parser.add_argument(
        "--train-file", help="training parquet with L_ref (default: the layout's reflen file)"
    )
    parser.add_argument("--val-file", action="append", help="validation parquet(s) (verl)")
    parser.add_argument(
        "--model", help="initial model folder (default: base model, or the parent's final model)"
    )
    parser.add_argument("--nnodes", type=int, help="override training.nnodes (the Slurm launcher passes it)")
    parser.add_argument("--stop-after", type=int, help="TRL: stop after this many steps (a rerun resumes)")
    parser.add_argument(
        "--threads", type=int, help="TRL on CPU: torch threads (default: OMP_NUM_THREADS or 1)"
    )


def _config(args: argparse.Namespace) -> dict:
    from lie.config import experiment, load_config

    config = load_config(args.config)
    experiment(config, args.run)  # unknown run -> clear error
    if args.nnodes:
        config["training"]["nnodes"] = args.nnodes
    return config


def run(args: argparse.Namespace) -> int:
    from lie.config.identity import train_engine

    config = _config(args)
    engine = args.engine or train_engine(config, args.run)
    if engine == "verl":
        return _run_verl(config, args)
    return _run_trl(config, args)


def _run_verl(config: dict, args: argparse.Namespace) -> int:
    from lie.config import outdir, run_settings
    from lie.engines.verl import cpu as verl_cpu
    from lie.engines.verl import overrides as verl_overrides
    from lie.formats.runs import RunDir

    inputs = verl_overrides.inputs_for(config, args.run)
    inputs = verl_overrides.VerlInputs(
        train_file=args.train_file or inputs.train_file,
        val_files=tuple(args.val_file) if args.val_file else inputs.val_files,
        model_path=args.model or inputs.model_path,
    )
    inputs = verl_overrides.absolute(inputs)
    rundir = RunDir(outdir(config), args.run)
    device = args.device if args.device != "auto" else ("gpu" if verl_cpu.gpu_visible() else "cpu")
    if args.dry_run:
        return _print_verl_plan(config, args.run, inputs, rundir, device)
    for path in (inputs.train_file, *inputs.val_files):
        if not Path(path).exists():
            raise LieError(
                f"run {args.run}: input {path} does not exist; run its `lie data`/`lie reflen` stage first"
            )
    settings = run_settings(config, args.run)
    if device == "gpu":
        from lie.engines.gpu_env import check_driver

        check_driver()
    if not verl_overrides.prepare_resume(config, args.run, rundir):
        overrides = verl_overrides.overrides(
            config, args.run, inputs, metrics_file=str(rundir.new_metrics_file().resolve()), device=device
        )
        verl_overrides.write_composed(overrides, rundir.verl_config)
        cmd = verl_overrides.command(overrides, hydra_dir=(rundir.root / "hydra").resolve())
        write_json(
            rundir.run_json,
            {"engine": "verl", "device": device, "run": args.run, "settings": settings, "command": cmd},
        )
        env = {**os.environ, "HYDRA_FULL_ERROR": "1"}
        if device == "cpu":
            env = verl_cpu.environment(env)
        log.info("running verl (%s): %s", device, " ".join(cmd[:4]) + " ...")
        code = subprocess.run(cmd, env=env).returncode
        if code != 0:
            raise LieError(
                f"run {args.run}: verl exited with status {code}; rerun to resume from the last checkpoint"
            )
        verl_overrides.mark_complete(config, args.run, rundir)
    checkpoint = verl_overrides.final_checkpoint(rundir, settings.get("eval_step", "final"))
    step = int(checkpoint.name.rsplit("_", 1)[1])
    write_json(rundir.final_json, {"engine": "verl", "checkpoint": str(checkpoint), "step": step})
    return 0


def _print_verl_plan(config: dict, run: str, inputs, rundir, device: str) -> int:
    """verl's own config composed with this run's overrides and checked, then printed (nothing runs)."""
    from omegaconf import OmegaConf

    from lie.config import run_settings
    from lie.engines.verl import cpu as verl_cpu
    from lie.engines.verl import overrides as verl_overrides

    overrides = verl_overrides.overrides(
        config, run, inputs, metrics_file=str(rundir.metrics_dir / "launch.jsonl"), device=device
    )
    composed = verl_overrides.compose(overrides)
    verl_overrides.check_composed(composed)
    print(f"# device: {device}")
    if device == "cpu":
        print("# the CPU backend's overrides (lie.engines.verl.cpu.overrides), on top of the cluster's")
        for key, value in verl_cpu.overrides(run_settings(config, run)).items():
            print(f"#   {key}={value}")
    print("# reward (verl 0.9 `reward` group, as composed)")
    print(OmegaConf.to_yaml(composed.reward))
    print("# data")
    print(OmegaConf.to_yaml(composed.data))
    print("# actor_rollout_ref.actor")
    print(OmegaConf.to_yaml(composed.actor_rollout_ref.actor))
    print("# command")
    print(" ".join(verl_overrides.command(overrides)))
    return 0


def _run_trl(config: dict, args: argparse.Namespace) -> int:
    from lie.config.layout import Layout

    layout = Layout(config)
    from lie.config import experiment

    spec = experiment(config, args.run)
    train_file = Path(args.train_file or layout.reflen_file(spec["data"], spec["model"]))
    model = Path(args.model or layout.init_model(args.run))
    if args.dry_run:
        from lie.config import run_settings
        from lie.engines.trl import train as trl_train

        settings = run_settings(config, args.run)
        sched = trl_train.Schedule(
            int(settings["train_batch_size"]) // int(settings["ppo_mini_batch_size"]),
            int(settings["ppo_epochs"]),
            1,
        )
        cfg = trl_train.grpo_config(settings, sched, layout.run_dir(args.run).checkpoints, use_cpu=True)
        keys = ("importance_sampling_level", "loss_type", "epsilon", "epsilon_high", "delta", "beta",
                "num_generations", "per_device_train_batch_size", "steps_per_generation", "num_iterations",
                "temperature", "top_p", "max_completion_length", "learning_rate", "warmup_steps",
                "weight_decay", "max_grad_norm", "scale_rewards")  # fmt: skip
        for key in keys:
            print(f"{key}: {getattr(cfg, key)}")
        return 0
    for path in (train_file, model):
        if not path.exists():
            raise LieError(
                f"run {args.run}: input {path} does not exist; build it first (see `snakemake -n`)"
            )
    from lie.engines.trl import train as trl_train

    threads = args.threads or int(os.environ.get("OMP_NUM_THREADS", "1") or 1)
    trl_train.train(config, args.run, train_file, model, stop_after=args.stop_after, threads=threads)
    return 0
