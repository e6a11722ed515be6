"""``lie behaviours --gen FILE...``: reasoning behaviours in generations, by patterns or a judge.

Examples:
  lie behaviours --gen results/paper/generations/RUN/aime24.jsonl --gen ...  # phrase patterns
  lie behaviours --gen GEN.jsonl --out counts.jsonl --patterns my_patterns.yaml
  lie behaviours --gen GEN.jsonl --judge --model Qwen/Qwen3-8B --engine-arg tensor_parallel_size=4

Prints one row per file: responses, then per behaviour its count and (in brackets) per 100
responses. ``--out`` writes one JSON line per response (``file``, ``bench``, ``index``,
``sample``, ``counts``; with ``--judge`` also ``judge`` counts or ``judge_error``). Patterns:
``src/lie/analysis/behaviours.yaml``; judge prompt: ``src/lie/analysis/judge_prompt.yaml``.
"""

from __future__ import annotations

import argparse
import logging
from typing import Any

from lie.commands.argtypes import key_value
from lie.core.errors import LieError

log = logging.getLogger(__name__)


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
    judge.add_argument("--engine", choices=("vllm", "hf"), default="vllm", help="default vllm")
    judge.add_argument("--engine-arg", type=key_value, action="append", default=[], metavar="KEY=VALUE")
    judge.add_argument("--prompt", help="judge prompt file (default: lie/analysis/judge_prompt.yaml)")
    judge.add_argument("--chunk-chars", type=int, default=12000, help="longest response part a request holds")
    judge.add_argument("--max-tokens", type=int, default=1024, help="longest judge answer")
    judge.add_argument("--trust-remote-code", action="store_true")


def _cell(count: int, responses: int) -> str:
    return f"{count} ({100 * count / responses:.1f})" if responses else "—"


def run(args: argparse.Namespace) -> int:
    from lie.analysis.behaviours import Tally, load_classifier
    from lie.formats.generations import read_texts
    from lie.formats.jsonl import atomic_output, dumps

    if args.judge and not args.model:
        raise LieError("--judge needs --model (the judge model's folder or hub id)")
    if args.limit is not None and args.limit < 1:
        raise LieError(f"--limit must be >= 1, got {args.limit}")
    classifier = load_classifier(args.patterns)
    rows: list[dict[str, Any]] = []
    for path in args.gen:
        items = read_texts(path)[: args.limit]
        for item in items:
            rows.append({"file": path, **item, "counts": classifier.count(item["text"])})
    judged: dict[str, Tally] = {}
    if args.judge:
        from lie.analysis.judge import load_prompt
        from lie.stages.judge import judge_texts

        prompt = load_prompt(args.prompt)
        results = judge_texts(
            [row["text"] for row in rows],
            classifier,
            args.model,
            engine=args.engine,
            prompt=prompt,
            chunk_chars=args.chunk_chars,
            max_tokens=args.max_tokens,
            engine_kwargs=dict(args.engine_arg),
            trust_remote_code=args.trust_remote_code,
        )
        for row, result in zip(rows, results):
            row["judge_prompt_version"] = prompt.version
            if result.counts is None:
                row["judge_error"] = result.error
            else:
                row["judge"] = result.counts
                judged.setdefault(row["file"], Tally(classifier.names)).add(result.counts)
    if args.out:
        with atomic_output(args.out) as out:
            for row in rows:
                out.write(dumps({k: v for k, v in row.items() if k != "text"}) + "\n")
    names = classifier.names
    print("| file | responses | " + " | ".join(names) + " |")
    print("|---|---:|" + "---:|" * len(names))
    for path in args.gen:
        patterns = Tally(names)
        for row in rows:
            if row["file"] == path:
                patterns.add(row["counts"])
        cells = [_cell(patterns.counts[n], patterns.responses) for n in names]
        print(f"| {path} | {patterns.responses} | " + " | ".join(cells) + " |")
        if args.judge:
            j = judged.get(path, Tally(names))
            cells = [_cell(j.counts[n], j.responses) for n in names]
            print(
                f"| {path} (judge, {j.responses} read) | {patterns.responses} | " + " | ".join(cells) + " |"
            )
    print(
        "\ncells: occurrences (per 100 responses); an occurrence is a sentence (patterns) or a judged passage"
    )
    return 0
