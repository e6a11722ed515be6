"""``lie base-model M --out DIR``: a base model of config.yaml in a local folder.

Models with ``hf_id``/``revision`` are downloaded at that revision (``HF_TOKEN`` from the
environment for gated ones; offline from the hub cache with ``HF_HUB_OFFLINE=1``); models with
``tiny:`` are built locally, their tokenizer trained on the ``--corpus`` data files; with ``sft:``
beside ``tiny:`` they are then taught by a short supervised stage (``lie.stages.sft``, the CPU study).
"""

from __future__ import annotations

import argparse

from lie.commands.argtypes import add_config_option, check_written, load_config_option
from lie.stages.base_model import make_base_model
from lie.stages.placed import placed_outputs


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_option(parser)
    parser.add_argument("name", help="a model name of config.yaml's models")
    parser.add_argument("--out", help="output folder (default: <outdir>/base/<name>)")
    parser.add_argument(
        "--corpus", action="append", default=[], help="tiny models: data file(s) for the tokenizer"
    )


def run(args: argparse.Namespace) -> int:
    config = load_config_option(args)
    if not args.out:
        check_written(args, placed_outputs(config, "base-model", args.name))
    make_base_model(config, args.name, args.out, args.corpus)
    return 0
