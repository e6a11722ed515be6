"""``lie merge RUN [--out DIR]``: the run's evaluated checkpoint in Hugging Face format (``lie.stages.merge``).

verl checkpoints (FSDP shards) go through ``python -m verl.model_merger merge``; TRL checkpoints
are already in Hugging Face format and are copied. The output folder appears only when complete.
"""

from __future__ import annotations

import argparse

from lie.commands.argtypes import add_config_option, check_written, load_config_option
from lie.stages.merge import merge
from lie.stages.placed import placed_outputs


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run")
    add_config_option(parser)
    parser.add_argument("--out", help="output folder (default: <outdir>/models/<run>)")


def run(args: argparse.Namespace) -> int:
    config = load_config_option(args)
    if not args.out:
        check_written(args, placed_outputs(config, "merge", args.run))
    merge(config, args.run, args.out)
    return 0
