"""``lie reflen --config config.yaml --model M --data TRAIN.parquet --out TRAIN.reflen.parquet``.

Samples ``k`` responses of the base model ``M`` (a name of ``models:`` or a local folder) per
training prompt and writes ``L_ref`` (``reward_model.num_tokens``) with ``avg_response_len``,
``gen_count`` and ``ori_acc`` (``extra_info``). Defaults come from ``reflen:`` in the config; each
sample has its own seed (hashed from ``reflen.seed``, row and sample) and a budget of ``max_tokens``
capped at the model's context minus the prompt; work goes in ``OUT.shards/``, ``shard_size``
samples a shard (a killed run resumes there; removed after success).
Example: ``lie reflen --config config.yaml --model qwen3-4b-base --data data/dapo.parquet
--out data/dapo.qwen3-4b-base.reflen.parquet --engine vllm``.
"""

from __future__ import annotations

import argparse

from lie.commands.argtypes import add_config_option, add_engine_options, check_written, load_config_option
from lie.stages.reflen import run_reflen


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_option(parser, "the pipeline's config.yaml (its reflen: section)")
    parser.add_argument("--model", required=True, help="a model name of config.yaml, or a local model folder")
    parser.add_argument("--data", required=True, help="training set parquet written by `lie data`")
    parser.add_argument("--out", required=True, help="output parquet (written atomically)")
    parser.add_argument("--engine", choices=("hf", "vllm"), default=None, help="default: engines.generate")
    parser.add_argument("--k", type=int, default=None, help="samples per prompt (default reflen.k)")
    parser.add_argument(
        "--max-tokens", type=int, default=None, help="response limit (default reflen.max_tokens)"
    )
    parser.add_argument("--seed", type=int, default=None, help="base seed (default reflen.seed)")
    parser.add_argument(
        "--shard-size", type=int, default=None, help="samples per shard (default reflen.shard_size)"
    )
    add_engine_options(parser, "prompts")


def run(args: argparse.Namespace) -> int:
    check_written(args, {"the shard folder": f"{args.out}.shards"})
    config = load_config_option(args)
    run_reflen(
        config,
        args.model,
        args.data,
        args.out,
        engine=args.engine,
        limit=args.limit,
        progress=not args.no_progress,
        engine_kwargs=dict(args.engine_arg),
        k=args.k,
        max_tokens=args.max_tokens,
        seed=args.seed,
        shard_size=args.shard_size,
        enable_thinking=args.enable_thinking,
    )
    return 0
