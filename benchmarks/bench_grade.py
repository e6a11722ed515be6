"""Time the grading pool against a plain single-process loop on responses built from real answers.

Run: ``.venv/bin/python benchmarks/bench_grade.py`` (needs ../shared/data, or LIE_SHARED_DATA).
The gold answers of the authors' validation file (MATH-500, OlympiadBench, Minerva, AIME24/25,
AMC: 1,590 problems) each get a right response (a real solution text, then the gold boxed) and a
wrong one (another problem's answer boxed); a few pathological ones are added (power towers,
huge factorials, a 200,000-digit number, a 1,000-deep fraction, a response of 1 MB). Both paths
grade the same items: ``lie.grading.grade_many`` (worker processes, hard limit per item) and
``[grade_item(x) for x in items]`` (what a script would write). Prints both times, the ratio,
the slowest item, and whether the two agree. Targets: >= 1.7x on 2 cores; no item longer than
the limit + 1 s.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import time
from collections import Counter
from pathlib import Path
from typing import Any

from lie.grading import default_workers, grade_item, grade_many

DATA = Path(os.environ.get("LIE_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
SOLUTION_FILES = ["math500.jsonl", "olympiadbench.jsonl", "minerva_math.jsonl", "aime24.jsonl"]
TOWER = "2^{2^{2^{2^{2^{2}}}}}"
FRAC_CHAIN = "\\frac{1}{1+" * 1000 + "1" + "}" * 1000


def authors_golds() -> list[tuple[str, str]]:
    """(data_source, ground_truth) of every distinct problem of the authors' validation file."""
    from lie.formats.rows import read_rows

    rows = read_rows(
        DATA / "lie-authors" / "valid.all_qwen3.parquet", ("data_source", "reward_model", "extra_info")
    )
    seen, out = set(), []
    for row in rows:
        key = (row["data_source"], row["extra_info"]["index"])
        if key not in seen:
            seen.add(key)
            out.append((row["data_source"], row["reward_model"]["ground_truth"]))
    return out


def solution_texts() -> list[str]:
    """Real worked solutions (reasoning text with LaTeX), their own boxed answers removed."""
    texts = []
    for name in SOLUTION_FILES:
        with open(DATA / "qwen25-math-eval" / name, encoding="utf-8") as handle:
            for line in handle:
                solution = json.loads(line).get("solution")
                solution = solution[0] if isinstance(solution, list) else solution
                if solution:
                    texts.append(re.sub(r"\\boxed", r"\\mathbf", solution))
    return texts


def boxed(gold: str) -> str:
    return "\\boxed{" + gold.strip().strip("$") + "}"


def pathological(texts: list[str]) -> list[dict[str, Any]]:
    cases = [
        ("5", f"So the answer is ${TOWER}$, that is \\boxed{{{TOWER}}}."),
        (TOWER, f"\\boxed{{{TOWER} + 1}}"),
        ("5", "\\boxed{(10^{7})!}"),
        ("5", "\\boxed{10^{10^{9}}}"),
        ("7", "\\boxed{" + "9" * 200_000 + "}"),
        ("1", f"${FRAC_CHAIN}$ and then \\boxed{{{TOWER}}}"),
        ("2", (texts[0] + "\n") * 1500 + "\\boxed{2}"),
    ]
    return [{"response": r, "gold": g, "kind": "math", "group": "pathological"} for g, r in cases]


def build_items(seed: int, limit: int | None) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    golds = authors_golds()
    texts = solution_texts()
    items = []
    for i, (_source, gold) in enumerate(golds):
        text = texts[i % len(texts)]
        other = golds[rng.randrange(len(golds))][1]
        items.append(
            {
                "response": f"{text}\n\nThe answer is {boxed(gold)}.",
                "gold": gold,
                "kind": "math",
                "group": "right",
            }
        )
        items.append(
            {
                "response": f"{text}\n\nThe answer is {boxed(other)}.",
                "gold": gold,
                "kind": "math",
                "group": "wrong",
            }
        )
    rng.shuffle(items)
    if limit:
        items = items[:limit]
    bad = pathological(texts)
    for k, item in enumerate(bad):  # spread through the batch, not all at the end
        items.insert((k + 1) * len(items) // (len(bad) + 1), item)
    return items


def _burn(_: int) -> float:
    start, total = time.perf_counter(), 0
    for i in range(10_000_000):
        total += i
    return time.perf_counter() - start


def _best_wall(workers: int, repeats: int) -> float:
    import multiprocessing

    with multiprocessing.get_context("forkserver").Pool(workers) as pool:
        pool.map(_burn, range(workers))  # start-up
        walls = []
        for _ in range(repeats):
            start = time.perf_counter()
            pool.map(_burn, range(workers))
            walls.append(time.perf_counter() - start)
    return min(walls)


def cpu_ceiling(workers: int, repeats: int = 3) -> float:
    """The speed-up pure Python work gets from ``workers`` processes here, best of ``repeats`` (a VM
    may give less than its vCPU count): the pool's ratio on CPU-bound items is bounded by it."""
    return workers * _best_wall(1, repeats) / _best_wall(workers, repeats)


def describe(item: dict[str, Any]) -> str:
    response = item["response"]
    short = response if len(response) < 60 else response[:40] + f"... ({len(response):,} chars)"
    return f"{item['group']} gold={item['gold'][:30]!r} response={short!r}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=0, help="0: one per core")
    parser.add_argument("--timeout", type=float, default=20.0, help="hard limit per item, seconds")
    parser.add_argument("--limit", type=int, default=None, help="only the first N ordinary items")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    items = build_items(args.seed, args.limit)
    payload = [{k: v for k, v in item.items() if k != "group"} for item in items]
    groups = Counter(item["group"] for item in items)
    print(f"{len(items)} items: " + ", ".join(f"{k} {v}" for k, v in sorted(groups.items())))
    grade_item(payload[0])  # warm math-verify up in this process too
    workers = args.workers or default_workers()
    ceiling_before = cpu_ceiling(workers)

    start = time.perf_counter()
    pool = grade_many(payload, timeout_s=args.timeout, workers=args.workers, progress=False)
    pool_s = time.perf_counter() - start

    start = time.perf_counter()
    loop = []
    for item in payload:
        t = time.perf_counter()
        result = grade_item(item)
        result.seconds = time.perf_counter() - t
        loop.append(result)
    loop_s = time.perf_counter() - start

    slowest = max(range(len(pool)), key=lambda i: pool[i].seconds)
    slowest_loop = max(range(len(loop)), key=lambda i: loop[i].seconds)
    differ = [i for i in range(len(items)) if pool[i].correct != loop[i].correct]
    print(f"single-process loop: {loop_s:8.2f} s")
    print(f"pool ({workers} workers): {pool_s:8.2f} s")
    ceiling = (ceiling_before + cpu_ceiling(workers)) / 2
    ratio = loop_s / pool_s
    print(f"ratio:               {ratio:8.2f}x (target >= 1.7x on 2 cores)")
    print(
        f"CPU ceiling:         {ceiling:8.2f}x ({workers} processes of pure Python vs one, mean of before and "
        f"after; a shared VM may give fewer than {workers} cores) -> pool efficiency {ratio / ceiling:.0%}"
    )
    print(
        f"slowest item (pool): {pool[slowest].seconds:.2f} s, {pool[slowest].status}, {describe(items[slowest])}"
        f" (limit {args.timeout} s + 1 s: {'ok' if pool[slowest].seconds <= args.timeout + 1 else 'EXCEEDED'})"
    )
    print(f"slowest item (loop): {loop[slowest_loop].seconds:.2f} s, {describe(items[slowest_loop])}")
    for name in ("right", "wrong", "pathological"):
        idx = [i for i, item in enumerate(items) if item["group"] == name]
        print(f"  {name:12s} correct {sum(pool[i].correct for i in idx):5d} / {len(idx)}")
    print("statuses (pool):", dict(Counter(r.status for r in pool)))
    print("statuses (loop):", dict(Counter(r.status for r in loop)))
    print(f"pool and loop disagree on {len(differ)} items" + (f": {differ[:10]}" if differ else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
