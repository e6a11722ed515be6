"""``lie evaluate``: grade generations at every token budget (the logic: ``lie.stages.evaluate``).

``lie evaluate --config config.yaml --gen GEN.jsonl [--gen ...] [--data BENCH.parquet ...]
--tokenizer MODEL --out-scores SCORES.jsonl --out-summary SUMMARY.json`` (or ``SUMMARY.csv``).
"""

from __future__ import annotations

import argparse
import logging
from typing import Any

from lie.commands.argtypes import add_config_option
from lie.core.errors import LieError
from lie.grading import CHOICE_GRADINGS

log = logging.getLogger(__name__)


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
    from lie.config import load_config
    from lie.formats.graded import write_summary
    from lie.formats.jsonl import atomic_output, dumps
    from lie.stages.evaluate import evaluate

    config = load_config(args.config)
    if not str(args.out_summary).lower().endswith((".json", ".csv")):
        raise LieError(f"--out-summary must end in .json or .csv, got {args.out_summary}")
    from lie.formats.outputs import check_output_file

    inputs = [*args.gen, *(args.data or [])]
    check_output_file(args.out_scores, inputs)
    check_output_file(args.out_summary, [*inputs, args.out_scores])

    def tokenizer() -> Any:
        from lie.stages.base_model import tokenizer_for

        return tokenizer_for(config, args.tokenizer)

    scores, summary = evaluate(
        config,
        args.gen,
        tokenizer if args.tokenizer else None,
        timeout_s=args.timeout,
        workers=args.workers,
        progress=not args.no_progress,
        data_paths=args.data,
        mode=args.choice_grading,
    )
    with atomic_output(
        args.out_scores
    ) as out:  # renamed into place after the summary: never one without the other
        for line in scores:
            out.write(dumps(line) + "\n")
        write_summary(summary, args.out_summary)
    for bench, entry in summary["benchmarks"].items():
        last = entry["budgets"][str(summary["budgets"][-1])]
        log.info(
            "%s: %s = %.4f at %s tokens", bench, entry["avg@n"], last[entry["avg@n"]], summary["budgets"][-1]
        )
    return 0
