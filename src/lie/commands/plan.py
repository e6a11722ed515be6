"""``lie plan``: steps, rollout tokens and GPU-hours of the selected runs (lie.stages.plan says how).

Examples: ``lie plan --config config.yaml``; ``lie plan --runs qwen3-4b-base_dapo_gspo_lie --mfu 0.3``;
``lie plan --group sensitivity`` (an optional group of experiments, left out of the default runs).
"""

from __future__ import annotations

import argparse

from lie.commands.argtypes import add_config_option, key_value
from lie.core.errors import LieError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from lie.stages.plan import GEN_TOKENS_PER_S_4B, MFU

    add_config_option(parser)
    parser.add_argument("--runs", nargs="*", help="runs to plan (default: config's runs, else all)")
    parser.add_argument(
        "--group",
        action="append",
        default=[],
        help="add the runs of an optional group (experiments.<run>.group)",
    )
    parser.add_argument(
        "--gen-tps", type=float, default=GEN_TOKENS_PER_S_4B, help="generated tokens/s per GPU, 4B model"
    )
    parser.add_argument("--mfu", type=float, default=MFU, help="training model-FLOP utilisation")
    parser.add_argument(
        "--params",
        type=key_value,
        action="append",
        default=[],
        metavar="MODEL=BILLIONS",
        help="model size override",
    )


def run(args: argparse.Namespace) -> int:
    from lie.config import load_config
    from lie.stages.plan import plan, render

    config = load_config(args.config)
    runs = list(args.runs or [])
    for group in args.group:
        members = [n for n, e in (config.get("experiments") or {}).items() if e.get("group") == group]
        if not members:
            raise LieError(f"--group {group}: no experiment of {args.config} has group: {group}")
        runs += [n for n in members if n not in runs]
    if runs:
        config["runs"] = runs
        from lie.config import validate_config

        validate_config(config, source=f"{args.config} with --runs/--group")
    params = {}
    for name, value in args.params:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise LieError(f"--params {name}={value!r}: expected a model size in billions of parameters")
        params[name] = float(value)
    if not 0 < args.mfu <= 1 or args.gen_tps <= 0:
        raise LieError("--mfu must be in (0, 1] and --gen-tps > 0")
    print(render(plan(config, params, args.gen_tps, args.mfu), args.gen_tps, args.mfu))
    return 0
