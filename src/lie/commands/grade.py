"""``lie grade --in FILE --out FILE``: grade JSON-lines responses (``-`` = stdin/stdout).

In: ``response`` (str), ``gold`` (str), ``kind`` (``math`` | ``choice``) and, for choice items,
``choices`` (their letters, e.g. ``["A", "B", "C", "D"]``), optionally ``options`` (the option
texts, aligned with ``choices``) and ``choice_grading`` (``robust`` | ``authors``; default
``--choice-grading``, itself ``robust``). Out: the same objects with ``correct``, ``pred``,
``status`` (``ok`` | ``no_answer`` | ``timeout`` | ``error``) and ``message``.
Math answers go through math-verify in worker processes, each under a hard time limit
(``--timeout``, default ``evaluation.grade_timeout_s`` of ``--config`` or 20 s).
Example: ``lie grade --in responses.jsonl --out graded.jsonl --workers 8`` (the logic: ``lie.stages.grade``).
"""

from __future__ import annotations

import argparse

from lie.stages.grade import CHOICE_GRADINGS, DEFAULT_CHOICE_GRADING, grade_file


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--in",
        dest="inp",
        required=True,
        help='JSON-lines input file, or - for stdin; one item a line: {"response": "... \\\\boxed{42}", '
        '"gold": "42", "kind": "math"}, or for multiple choice {"response": "... (B)", "gold": "B", '
        '"kind": "choice", "choices": ["A", "B", "C", "D"]} (the item\'s letters, A-J), optionally '
        '"options" (the option texts, aligned with choices) and "choice_grading"',
    )
    parser.add_argument("--out", required=True, help="JSON-lines output file, or - for stdout")
    parser.add_argument("--config", help="config.yaml, for evaluation.grade_timeout_s and grade_workers")
    parser.add_argument("--timeout", type=float, default=None, help="hard limit per item, seconds")
    parser.add_argument("--workers", type=int, default=None, help="worker processes (0: one per core)")
    parser.add_argument(
        "--choice-grading",
        choices=CHOICE_GRADINGS,
        default=DEFAULT_CHOICE_GRADING,
        help="multiple-choice reader for items without their own choice_grading: robust (default) or "
        "authors (math-verify, then the authors' A-E patterns)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    grade_file(
        args.inp,
        args.out,
        config_path=args.config,
        timeout=args.timeout,
        workers=args.workers,
        choice_grading=args.choice_grading,
        progress=not args.no_progress,
    )
    return 0
