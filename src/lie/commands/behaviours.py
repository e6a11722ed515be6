"""``lie behaviours --gen FILE...``: reasoning behaviours in generations, by patterns or a judge.

Examples:
  lie behaviours --gen results/paper/generations/RUN/aime24.jsonl --gen ...  # phrase patterns
  lie behaviours --gen GEN.jsonl --out counts.jsonl --patterns my_patterns.yaml
  lie behaviours --gen GEN.jsonl --judge --model Qwen/Qwen3-8B --engine-arg tensor_parallel_size=4

Prints one row per file: responses, then per behaviour its count and (in brackets) per 100
responses. ``--out`` writes one JSON line per response (``file``, ``bench``, ``index``,
``sample``, ``counts``; with ``--judge`` also ``judge`` counts or ``judge_error``). Patterns:
``src/lie/analysis/behaviours.yaml``; judge prompt: ``src/lie/analysis/judge_prompt.yaml``
(the logic: ``lie.stages.behaviours``).
"""

from __future__ import annotations

import argparse

from lie.commands.argtypes import key_value, positive_int
from lie.core.errors import LieError
from lie.stages.behaviours import JudgeChoice, count_behaviours


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--gen", nargs="+", action="extend", required=True, help="`lie generate` files (JSON lines)"
    )
    parser.add_argument("--patterns", help="behaviour patterns (default: lie/analysis/behaviours.yaml)")
    parser.add_argument("--out", help="per-response counts, JSON lines (written atomically)")
    parser.add_argument("--limit", type=int, help="only the first N responses of each file")
    judge = parser.add_argument_group("judge mode (a model served by vLLM counts the behaviours)")
    judge.add_argument("--judge", action="store_true", help="also ask a judge model")
    judge.add_argument("--model", help="the judge: a local folder or a hub id")
    judge.add_argument("--engine", choices=("vllm", "hf"), default="vllm", help="the judge's engine")
    judge.add_argument("--engine-arg", type=key_value, action="append", default=[], metavar="KEY=VALUE")
    judge.add_argument("--prompt", help="judge prompt file (default: lie/analysis/judge_prompt.yaml)")
    judge.add_argument(
        "--chunk-chars", type=positive_int, default=12000, help="longest response part a request holds"
    )
    judge.add_argument("--max-tokens", type=positive_int, default=1024, help="longest judge answer")
    judge.add_argument("--trust-remote-code", action="store_true")


def run(args: argparse.Namespace) -> int:
    if args.judge and not args.model:
        raise LieError("--judge needs --model (the judge model's folder or hub id)")
    judge = None
    if args.judge:
        judge = JudgeChoice(
            args.model,
            engine=args.engine,
            prompt=args.prompt,
            chunk_chars=args.chunk_chars,
            max_tokens=args.max_tokens,
            engine_kwargs=dict(args.engine_arg),
            trust_remote_code=args.trust_remote_code,
        )
    print(count_behaviours(args.gen, args.patterns, args.limit, args.out, judge))
    return 0
