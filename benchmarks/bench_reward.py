"""Time the LIE reward on one training step's worth of rollouts.

Run: ``.venv/bin/python benchmarks/bench_reward.py`` (or ``make bench``). A synthetic batch of
1,024 responses of about 8,000 words, half of them looping, is scored by ``lie.core.reward.score_batch``
and by a straightforward implementation written here (a Counter over word tuples, the baseline);
``str.split`` alone on the same batch is the floor. Targets: batch <= 1 s on one core, >= 5x.
"""

from __future__ import annotations

import argparse
import os
import random
import time
from collections import Counter

from lie.core.reward import RewardConfig, score_batch


def make_batch(size: int, words: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(5000)] + ["the", "=", "+", "\\frac{1}{2}", "x_1", "so", "Let's", "check:"]
    batch = []
    for i in range(size):
        if i % 2 == 0:  # looping: a paragraph of 150-400 words repeated to the length
            block = rng.choices(vocab, k=rng.randint(150, 400))
            body = (block * (words // len(block) + 1))[:words]
        else:
            body = rng.choices(vocab, k=words)
        batch.append(" ".join(body))
    return batch


def baseline(text: str, n: int = 10, theta: int = 10) -> tuple[float, int, int]:
    """The plain implementation: a Counter over word tuples."""
    words = []
    for segment in text.split():
        words.extend(segment.split("_"))
    counts = Counter(tuple(words[i : i + n]) for i in range(len(words) - n + 1))
    top = max(counts.values(), default=0)
    penalty = -0.6 if len(words) > n and top >= theta else 0.0
    return penalty, top, len(counts)


def best_of(repeats: int, fn) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--words", type=int, default=8000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})  # one core, as the target says
    batch = make_batch(args.size, args.words, args.seed)
    n = len(batch)
    cfg = RewardConfig()
    zeros, refs = [0] * n, [9192] * n

    t_split, _ = best_of(args.repeats, lambda: [s.split() for s in batch])
    t_ours, ours = best_of(args.repeats, lambda: score_batch(batch, [False] * n, zeros, refs, cfg))
    t_base, base = best_of(1, lambda: [baseline(s) for s in batch])
    agree = all((o.r_red, o.max_ngram_count, o.c_context) == b for o, b in zip(ours, base))
    looping = sum(o.r_red < 0 for o in ours)

    print(f"batch: {n} responses x {args.words} words ({looping} penalised as looping), one core")
    print(f"str.split alone (floor): {t_split:8.3f} s")
    print(f"lie.core.reward.score_batch:  {t_ours:8.3f} s   target <= 1 s: {'yes' if t_ours <= 1 else 'NO'}")
    print(f"baseline (Counter):      {t_base:8.3f} s")
    print(
        f"speed-up vs baseline:    {t_base / t_ours:8.1f} x  target >= 5x: {'yes' if t_base / t_ours >= 5 else 'NO'}"
    )
    print(f"ours / floor:            {t_ours / t_split:8.2f} x")
    print(f"results agree with the baseline: {agree}")
    return 0 if agree else 1


if __name__ == "__main__":
    raise SystemExit(main())
