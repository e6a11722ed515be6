"""Shards by expected tokens against the old 256-sample chunks, on vLLM's CPU build, in one run.

Run: ``.venv-vllm/bin/python benchmarks/bench_shards.py`` (after ``make venv-vllm``). One engine
call per shard, as ``lie generate`` makes them (``lie.stages.sample_shards``): a call lasts as long
as its longest sample, so a shard of mixed lengths ends in a tail where few samples run. The
workload: ``--samples`` requests of the smoke tiny model (random weights), prompts of 24-64 tokens,
whose response lengths follow a reasoning model's on a benchmark (log-normal, median 150 tokens, a
long tail cut at ``--max-tokens``): each request is vLLM's ``SamplingParams`` as
``lie.engines.generation.VLLMEngine`` builds them (n=1, its seed, temperature 1), with its length as
its ``max_tokens`` and ``ignore_eos`` (a random model's end-of-sequence token would stop it at
random), sent through the engine's ``LLM`` one call per shard. Four plans of the same requests,
each timed over all its calls, repeated ``--rounds`` times in turn (so a shared machine's load
falls on each):

- ``chunks``: the old plan, consecutive chunks of ``--shard-size`` samples (the data's order);
- ``planned``: ``lie.formats.resumable.assign_shards`` given the true lengths (a reference length):
  at least ``--shard-size`` samples a shard, similar lengths together, short ones in bigger shards;
- ``noisy``: the same plan given the lengths times log-normal noise (sigma 0.5), an estimate;
- ``tokens``: shards of equal expected tokens only (``min_units=1``), the longest samples in
  small shards: the design rejected for the default (a shard of a few long samples is all tail).

Prints first what the load cannot change: each plan's decode steps (the sum of its calls' longest
samples) and how busy its calls' slots are; then each plan's median time and tokens/s, and
chunks' time over the plan's in each round (run one after the other, in a rotated order) with its
median over rounds (higher is better).
vLLM runs with ``make smoke``'s settings (``engines.vllm_cpu`` of workflow/configs/smoke.yaml).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def smoke_vllm_cpu() -> dict:
    import yaml

    return yaml.safe_load((REPO / "workflow" / "configs" / "smoke.yaml").read_text())["engines"]["vllm_cpu"]


def lengths(count: int, max_tokens: int, seed: int) -> list[int]:
    """Response lengths: log-normal (median 150 tokens), cut at ``max_tokens``."""
    rng = random.Random(seed)
    return [max(4, min(max_tokens, round(rng.lognormvariate(5.0, 0.9)))) for _ in range(count)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=1024)
    parser.add_argument("--shard-size", type=int, default=256)
    parser.add_argument("--max-tokens", type=int, default=2048)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    cpu = smoke_vllm_cpu()
    for key, value in cpu["env"].items():  # before vLLM (or torch) is imported
        os.environ.setdefault(key, str(value))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        import vllm  # noqa: F401
    except ImportError:
        sys.exit("run it with .venv-vllm/bin/python (make venv-vllm)")
    from vllm import SamplingParams, TokensPrompt

    from lie.engines.generation import load_engine
    from lie.formats.resumable import assign_shards, shard_ranges
    from lie.stages.tiny import build_tiny

    wanted = lengths(args.samples, args.max_tokens, args.seed)
    noise = random.Random(args.seed + 1)
    noisy = [max(1, round(w * noise.lognormvariate(0, 0.5))) for w in wanted]
    plans = {
        "chunks": [list(r) for r in shard_ranges(args.samples, args.shard_size)],
        "planned": assign_shards(wanted, args.shard_size),
        "noisy": assign_shards(noisy, args.shard_size),
        "tokens": assign_shards(wanted, args.shard_size, min_units=1),
    }
    with tempfile.TemporaryDirectory() as tmp:
        model = str(
            build_tiny(Path(tmp) / "tiny", ["What is 1 + 2? The answer is 3."], vocab_size=400, head_dim=32)
        )
        # a prompt's prefill in one scheduler step: vLLM 0.24's CPU build cannot split the prefill of a
        # seeded request ("CPU Generator does not use offset"), so the step's budget holds every prompt
        budget = max(8192, 64 * args.samples)
        engine = load_engine(
            "vllm",
            model,
            max_model_len=args.max_tokens + 128,
            max_num_batched_tokens=budget,
            **cpu["engine_args"],
        )
        prompts = [
            TokensPrompt(prompt_token_ids=[5 + (i * 7 + j) % 300 for j in range(24 + i % 41)])
            for i in range(args.samples)
        ]
        params = [
            SamplingParams(n=1, temperature=1.0, top_p=1.0, max_tokens=w, seed=args.seed + i, ignore_eos=True)
            for i, w in enumerate(wanted)
        ]

        def call(shard: list[int]) -> int:
            out = engine.llm.generate([prompts[u] for u in shard], [params[u] for u in shard], use_tqdm=False)
            return sum(len(o.token_ids) for result in out for o in result.outputs)

        call([0, 1, 2, 3])  # warm-up
        times: dict[str, list[float]] = {name: [] for name in plans}
        tokens: dict[str, int] = {}
        names = list(plans)
        for round_ in range(args.rounds):
            for name in names[round_ % len(names) :] + names[: round_ % len(names)]:  # rotated order
                begin = time.perf_counter()
                tokens[name] = sum(call(shard) for shard in plans[name])
                times[name].append(time.perf_counter() - begin)
    print(
        f"{args.samples} samples (lengths median {statistics.median(wanted):.0f}, mean "
        f"{statistics.mean(wanted):.0f}, max {max(wanted)} tokens), shard size {args.shard_size}, "
        f"{args.rounds} rounds, load average {os.getloadavg()[0]:.1f}"
    )
    for name, plan in plans.items():  # what the machine's load cannot change
        steps = sum(max(wanted[u] for u in shard) for shard in plan)
        slots = sum(len(shard) * max(wanted[u] for u in shard) for shard in plan)
        print(
            f"{name:8s} decode steps (each call's longest sample, summed) {steps:5d}; "
            f"slots busy {sum(wanted) / slots:.0%} (sampled tokens / calls' samples x longest)"
        )
    for name, plan in plans.items():
        # the ratio within each round (the same load for both), then its median over the rounds
        ratios = [c / t for c, t in zip(times["chunks"], times[name])]
        best = statistics.median(times[name])
        print(
            f"{name:8s} {len(plan):3d} shards ({min(map(len, plan))}-{max(map(len, plan))} samples)  "
            f"median {best:6.1f} s  {tokens[name] / best:6.0f} tokens/s  chunks / this, median of rounds: "
            f"{statistics.median(ratios):.2f}x  (rounds: {', '.join(f'{r:.2f}x' for r in ratios)})"
        )


if __name__ == "__main__":
    main()
