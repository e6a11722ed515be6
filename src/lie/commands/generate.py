"""``lie generate``: n sampled completions per benchmark problem (the logic: ``lie.stages.generate``).

``lie generate BENCH --config config.yaml --model M --data BENCH.parquet --out GEN.jsonl``
"""

from __future__ import annotations

import argparse

from lie.commands.argtypes import add_config_option, add_engine_options, check_written, load_config_option
from lie.stages.generate import manifest_path, run_generate


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("bench", help="benchmark name (a key of datasets.eval)")
    add_config_option(parser, "the pipeline's config.yaml")
    parser.add_argument("--model", required=True, help="a model name of config.yaml, or a local model folder")
    parser.add_argument("--data", required=True, help="the benchmark's parquet, written by `lie data`")
    parser.add_argument("--out", required=True, help="JSON-lines output (written atomically)")
    parser.add_argument("--engine", choices=("hf", "vllm"), default=None, help="default: engines.generate")
    parser.add_argument("--n", type=int, default=None, help="samples per problem (default datasets.eval.B.n)")
    parser.add_argument("--max-tokens", type=int, default=None, help="default evaluation.max_tokens")
    parser.add_argument("--seed", type=int, default=None, help="base seed (default evaluation.seed)")
    parser.add_argument(
        "--shard-size", type=int, default=None, help="samples per shard (evaluation.shard_size)"
    )
    add_engine_options(parser, "problems")


def run(args: argparse.Namespace) -> int:
    if str(args.out) != "-":  # its records beside it, apart from every input (the config too)
        check_written(
            args, {"the manifest": manifest_path(args.out), "the shard folder": f"{args.out}.shards"}
        )
    config = load_config_option(args)
    run_generate(
        config,
        args.model,
        args.bench,
        args.data,
        args.out,
        engine=args.engine,
        n=args.n,
        max_tokens=args.max_tokens,
        seed=args.seed,
        shard_size=args.shard_size,
        enable_thinking=args.enable_thinking,
        limit=args.limit,
        engine_kwargs=dict(args.engine_arg),
        progress=not args.no_progress,
    )
    return 0
