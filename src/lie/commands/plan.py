"""``lie plan``: steps, rollout tokens and GPU-hours of the selected runs (lie.stages.plan says how).

Examples: ``lie plan --config config.yaml``; ``lie plan --runs qwen3-4b-base_dapo_gspo_lie --mfu 0.3``;
``lie plan --group sensitivity`` (an optional group of experiments, left out of the default runs).
"""

from __future__ import annotations

import argparse

from lie.commands.argtypes import add_config_option, key_value, load_config_option, number_in
from lie.stages.plan import GEN_TOKENS_PER_S_4B, MFU, plan_selected


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_option(parser)
    parser.add_argument("--runs", nargs="*", help="runs to plan (default: the config's runs, else all)")
    parser.add_argument(
        "--group",
        action="append",
        default=[],
        help="plan the runs of an optional group (experiments.<run>.group, e.g. sensitivity) instead of the "
        "config's runs, beside those of --runs; repeat for more groups",
    )
    parser.add_argument(
        "--gen-tps",
        type=number_in(0.001, 1e9),
        default=GEN_TOKENS_PER_S_4B,
        help="generated tokens/s per GPU, 4B model",
    )
    parser.add_argument(
        "--mfu", type=number_in(0.001, 1.0), default=MFU, help="training model-FLOP utilisation"
    )
    parser.add_argument(
        "--params",
        type=key_value,
        action="append",
        default=[],
        metavar="MODEL=BILLIONS",
        help="a model's size in billions of parameters, instead of the one read from its id (repeat)",
    )


def run(args: argparse.Namespace) -> int:
    config = load_config_option(args)
    print(plan_selected(config, args.config, args.runs, args.group, args.params, args.gen_tps, args.mfu))
    return 0
