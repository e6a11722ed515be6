"""``lie evaluate``: grade generations at every token budget (the logic: ``lie.stages.evaluate``).

``lie evaluate --config config.yaml --gen GEN.jsonl [--gen ...] [--data BENCH.parquet ...]
--tokenizer MODEL --out-scores SCORES.jsonl --out-summary SUMMARY.json`` (or ``SUMMARY.csv``).
"""

from __future__ import annotations

import argparse

from lie.commands.argtypes import add_config_option, load_config_option
from lie.stages.evaluate import CHOICE_GRADINGS, evaluate_files


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_option(parser, "config.yaml (its evaluation: section)")
    parser.add_argument(
        "--gen", action="append", required=True, help="generations of `lie generate` (repeat)"
    )
    parser.add_argument(
        "--data", action="append", default=[], help="benchmark parquet of `lie data` (option texts; repeat)"
    )
    parser.add_argument(
        "--choice-grading", choices=CHOICE_GRADINGS, default=None, help="default: evaluation.choice_grading"
    )
    parser.add_argument("--tokenizer", help="the model (folder or config model name) whose tokenizer decodes")
    parser.add_argument("--out-scores", required=True, help="per-sample scores, JSON lines")
    parser.add_argument("--out-summary", required=True, help="summary, .json or .csv")
    parser.add_argument("--timeout", type=float, default=None, help="hard limit per item (grade_timeout_s)")
    parser.add_argument("--workers", type=int, default=None, help="grading processes (grade_workers)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    evaluate_files(
        load_config_option(args),
        args.gen,
        args.out_scores,
        args.out_summary,
        tokenizer=args.tokenizer,
        data_paths=args.data or [],
        timeout_s=args.timeout,
        workers=args.workers,
        progress=not args.no_progress,
        mode=args.choice_grading,
    )
    return 0
