"""``lie study-report --config workflow/configs/study.yaml``: the CPU study's figures and tables.

Reads only files a finished study wrote (rollouts, evaluation summaries and generations, the base
model's tokenizer) and writes ``figures/study*.png`` and ``tables/study_*.{csv,md}`` under the
config's ``outdir`` (``lie.study.stages.steps``, ``lie.study.report``). The ``study`` rule of the Snakefile runs it.
"""

from __future__ import annotations

import argparse

from lie.commands.argtypes import add_config_option, check_written, load_config_option
from lie.study.stages.steps import placed_outputs, study_report


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_option(parser, "the study's config (with a study: section)")
    parser.add_argument(
        "--pool",
        action="append",
        default=[],
        metavar="OUTDIR",
        help="another machine's study outdir (its tables/study_paired.csv): the registered tests on the "
        "union of the pairs go to tables/study_tests_pooled.csv (docs/study/preregistration-v2.md)",
    )


def run(args: argparse.Namespace) -> int:
    config = load_config_option(args)
    check_written(args, placed_outputs(config, "study-report"))
    study_report(config, pool_with=args.pool)
    return 0
