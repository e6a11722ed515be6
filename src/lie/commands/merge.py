"""``lie merge RUN [--out DIR]``: the run's evaluated checkpoint in Hugging Face format (``lie.stages.merge``).

verl checkpoints (FSDP shards) go through ``python -m verl.model_merger merge``; TRL checkpoints
are already in Hugging Face format and are copied. The output folder appears only when complete.
"""

from __future__ import annotations

import argparse

from lie.commands.argtypes import add_config_option, load_config_option


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run")
    add_config_option(parser)
    parser.add_argument("--out", help="output folder (default: <outdir>/models/<run>)")


def run(args: argparse.Namespace) -> int:
    from lie.stages.merge import merge

    merge(load_config_option(args), args.run, args.out)
    return 0
