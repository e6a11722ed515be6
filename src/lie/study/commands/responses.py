"""``lie study-responses --config C --gen GEN --scores SCORES --data D --tokenizer M --out OUT``.

One JSON line per generated sample with the study's columns (``lie.study.responses``): depth
needed and reached, hops right, repeats, n-gram states, the strict grade and the pipeline's grades
at every budget copied from ``lie evaluate``'s scores. The study's gates and report read these.
"""

from __future__ import annotations

import argparse

from lie.commands.argtypes import add_config_option, load_config_option
from lie.study.stages.steps import study_responses


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_option(parser, "the study's config (its reward: knobs)")
    parser.add_argument("--gen", action="append", required=True, help="generations of lie generate (repeat)")
    parser.add_argument("--scores", required=True, help="their scores (lie evaluate --out-scores)")
    parser.add_argument("--data", action="append", required=True, help="the benchmarks' parquet (repeat)")
    parser.add_argument("--tokenizer", required=True, help="the generating model (folder or config name)")
    parser.add_argument("--out", required=True, help="JSON-lines output")


def run(args: argparse.Namespace) -> int:
    study_responses(load_config_option(args), args.gen, args.scores, args.data, args.tokenizer, args.out)
    return 0
