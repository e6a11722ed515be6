"""``lie train RUN``: one run of config.yaml, with verl or TRL (the logic: ``lie.stages.train``).

Examples:
  lie train qwen3-4b-base_dapo_gspo_lie --config config.yaml --dry-run   # compose verl's config, print it
  lie train qwen3-4b-base_dapo_gspo_lie --config config.yaml             # run verl on this node
  lie train smoke_gspo_lie --config workflow/configs/smoke.yaml --engine trl
Inputs default to the pipeline's layout (lie.config.layout); outputs go to <outdir>/runs/<run>/.
"""

from __future__ import annotations

import argparse
import logging

from lie.commands.argtypes import add_config_option, check_written, load_config_option, positive_int
from lie.stages.placed import placed_outputs
from lie.stages.train import TrainRequest, composition, train

log = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", help="a run name of config.yaml's experiments")
    add_config_option(parser)
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
    parser.add_argument(
        "--nnodes", type=positive_int, help="override training.nnodes (the Slurm launcher passes it)"
    )
    parser.add_argument(
        "--stop-after", type=positive_int, help="TRL: stop after this many steps (a rerun resumes)"
    )
    parser.add_argument(
        "--threads", type=positive_int, help="TRL on CPU: torch threads (default: OMP_NUM_THREADS or 1)"
    )


def run(args: argparse.Namespace) -> int:
    config = load_config_option(args)
    request = TrainRequest(
        run=args.run,
        engine=args.engine,
        device=args.device,
        train_file=args.train_file,
        val_files=tuple(args.val_file) if args.val_file else None,
        model=args.model,
        stop_after=args.stop_after,
        threads=args.threads,
        nnodes=args.nnodes,  # the Slurm launcher passes the allocation's nodes
    )
    if args.dry_run:
        print(composition(config, request))
        return 0

    check_written(args, placed_outputs(config, "train", args.run))
    train(config, request)
    return 0
