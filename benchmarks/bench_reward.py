"""Time the LIE reward on one training step's worth of rollouts.

Run: ``.venv/bin/python benchmarks/bench_reward.py`` (or ``make bench``). A synthetic batch of
1,024 responses of about 8,000 words, half of them looping, is scored by ``lie.core.reward.score_batch``
and by a straightforward implementation written here (a Counter over word tuples, the baseline);
``str.split`` alone on the same batch is the floor. Targets: batch <= 1 s on one core, >= 5x; one line
per target ends in yes or NO. No data file is read (one line says so): it runs the same on a fresh
clone. Exit 1 when the two implementations disagree. ``--quick``: 64 responses of 2,000 words, one
repeat (about a second; what the tests run): a check that the script runs, too small for its verdicts
to measure the targets.
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


def verdict(met: bool) -> str:
    return "yes" if met else "NO"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=None, help="responses (default 1,024; --quick 64)")
    parser.add_argument(
        "--words", type=int, default=None, help="words a response (default 8,000; --quick 2,000)"
    )
    parser.add_argument("--repeats", type=int, default=None, help="best of (default 3; --quick 1)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="a small batch, one repeat: about a second")
    args = parser.parse_args(argv)
    size, words, repeats = (64, 2000, 1) if args.quick else (1024, 8000, 3)
    size, words, repeats = args.size or size, args.words or words, args.repeats or repeats
    for name, value in (("--size", size), ("--words", words), ("--repeats", repeats)):
        if value < 1:
            parser.error(f"{name} must be at least 1, not {value}")
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})  # one core, as the target says
    print(f"data: synthetic, seed {args.seed} (no data file)")
    batch = make_batch(size, words, args.seed)
    n = len(batch)
    cfg = RewardConfig()
    zeros, refs = [0] * n, [9192] * n

    t_split, _ = best_of(repeats, lambda: [s.split() for s in batch])
    t_ours, ours = best_of(repeats, lambda: score_batch(batch, [False] * n, zeros, refs, cfg))
    t_base, base = best_of(1, lambda: [baseline(s) for s in batch])
    agree = all((o.r_red, o.max_ngram_count, o.c_context) == b for o, b in zip(ours, base))
    looping = sum(o.r_red < 0 for o in ours)

    print(f"batch: {n} responses x {words} words ({looping} penalised as looping), one core")
    print(f"str.split alone (floor): {t_split:8.3f} s")
    print(f"lie.core.reward.score_batch:  {t_ours:8.3f} s")
    print(f"baseline (Counter):      {t_base:8.3f} s")
    print(f"ours / floor:            {t_ours / t_split:8.2f} x")
    print(f"results agree with the baseline: {agree}")
    targets = {
        f"score_batch {t_ours:.3f} s <= 1 s (1,024 x 8,000 words, one core)": t_ours <= 1,
        f"speed-up {t_base / t_ours:.1f}x >= 5x the Counter baseline": t_base / t_ours >= 5,
    }
    for target, met in targets.items():
        print(f"target {target}: {verdict(met)}")
    full = (size, words) == (1024, 8000)
    small = "" if full else f" ({size} x {words} words: not the targets' batch, so not a measurement of them)"
    print(f"bench_reward: every target met: {verdict(all(targets.values()))}{small}")
    return 0 if agree else 1


if __name__ == "__main__":
    raise SystemExit(main())
