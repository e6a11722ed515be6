"""``lie study-probe --config C --model M --data D --out GEN``: the supervised model, sampled as RL samples.

``study.probe.n`` samples per problem of the study's benchmark at the rollouts' temperature and
length limit (``lie.study.stages.probe``), in ``lie generate``'s format; grade them with ``lie evaluate``.
"""

from __future__ import annotations

import argparse

from lie.commands.argtypes import add_config_option, load_config_option
from lie.study.stages.probe import run_probe


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_option(parser, "the study's config (with a study: section)")
    parser.add_argument("--model", required=True, help="a model name of the config, or a model folder")
    parser.add_argument("--data", required=True, help="the study benchmark's parquet (lie data)")
    parser.add_argument("--out", required=True, help="JSON-lines output, as lie generate writes it")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument(
        "--forced",
        action="store_true",
        help="the third registration's forced-depth probe (study.third.forced_probe): no end of sequence "
        "or boxed answer before the problem's depth is written",
    )


def run(args: argparse.Namespace) -> int:
    run_probe(
        load_config_option(args),
        args.model,
        args.data,
        args.out,
        progress=not args.no_progress,
        forced=args.forced,
    )
    return 0
