"""``lie report --config CONFIG``: tables and figures beside the paper's numbers, from files only.

Reads ``scores/<key>/summary.json``, ``runs/<run>/{metrics,rollouts}`` and
``generations/<key>/<bench>.jsonl`` under the config's ``outdir``; writes the result tables in the
paper's layout, with the config's footnotes (``tables/{main,families,scale,ablation,sensitivity}
.{md,csv,tex}``, those that get a row), ``tables/lengths.{md,csv}`` and ``figures/lengths.png``,
``tables/tts.csv``, ``figures/tts.png``, ``figures/dynamics.png``, ``tables/behaviours.{md,csv}``,
``tables/diversity.{md,csv}`` and ``tables/dynamics.csv``, all or none (``lie.report.build``).
What each file holds: the README's "Report" section. Example:
``lie report --config workflow/configs/smoke.yaml``.
"""

from __future__ import annotations

import argparse

from lie.commands.argtypes import add_config_option, check_written, load_config_option
from lie.stages.placed import placed_outputs
from lie.stages.report import report


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_option(parser, "the pipeline's config (its outdir holds the inputs)")
    parser.add_argument(
        "--max-points", type=int, default=200, help="training steps read per run, evenly spaced (default 200)"
    )


def run(args: argparse.Namespace) -> int:
    config = load_config_option(args)
    check_written(args, placed_outputs(config, "report"))
    paths = report(config, max_points=args.max_points)
    if paths:
        print(*paths, sep="\n")
    return 0
