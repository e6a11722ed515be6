"""Time the grading pool against a plain single-process loop on responses built from real answers.

Run: ``.venv/bin/python benchmarks/bench_grade.py`` (or ``make bench``). Data: the full files of
../shared/data (or ``$LIE_SHARED_DATA``) where they are present, else the committed slices of
tests/data/shared (same layout, 39 problems; a fresh clone), which ``--slices`` also forces; one line
says which. The gold answers of the authors' validation file (MATH-500, OlympiadBench, Minerva, AIME24/25,
AMC: 1,590 problems) each get a right response (a real solution text, then the gold boxed) and a
wrong one (another problem's answer boxed); a few pathological ones are added (power towers,
huge factorials, a 200,000-digit number, a 1,000-deep fraction, a response of 1 MB). Both paths
grade the same items: ``lie.grading.grade_many`` (worker processes, hard limit per item) and
``[grade_item(x) for x in items]`` (what a script would write). Prints both times, the ratio,
the slowest item, and whether the two agree; one line per target ends in yes or NO. Targets: >= 1.7x on
2 cores; no item longer than the limit + 1 s. Exit 1 when the pool and the loop disagree on an item.
``--quick``: 40 items, no pathological ones and a short CPU ceiling (seconds; what the tests run): a
check that the script runs, too small for its verdicts to measure the targets.
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

REPO = Path(__file__).resolve().parents[1]
SLICES = REPO / "tests" / "data" / "shared"  # committed slices of the same files, same layout
VALIDATION = "lie-authors/valid.all_qwen3.parquet"
SOLUTION_FILES = ["math500.jsonl", "olympiadbench.jsonl", "minerva_math.jsonl", "aime24.jsonl"]
NEEDED = [VALIDATION, *(f"qwen25-math-eval/{name}" for name in SOLUTION_FILES)]
TOWER = "2^{2^{2^{2^{2^{2}}}}}"
FRAC_CHAIN = "\\frac{1}{1+" * 1000 + "1" + "}" * 1000


def full_data() -> Path:
    """Where the full files are looked for: ``$LIE_SHARED_DATA``, else ../shared/data beside the checkout."""
    return Path(os.environ.get("LIE_SHARED_DATA") or REPO.parent / "shared" / "data")


def pick_data(force_slices: bool = False) -> tuple[Path, str]:
    """The folder to read and the one line that says which it is (the full files, or the slices and why)."""
    full = full_data()
    absent = [name for name in NEEDED if not (full / name).is_file()]
    if not force_slices and not absent:
        return full, f"data: the full files of {full}"
    missing = [name for name in NEEDED if not (SLICES / name).is_file()]
    if missing:
        raise SystemExit(
            f"bench_grade: {SLICES / missing[0]} is missing (tests/data/shared/make_slices.py rebuilds it)"
        )
    why = "--slices" if force_slices else f"{full / absent[0]} is absent"
    return (
        SLICES,
        f"data: the committed slices of {SLICES.relative_to(REPO)} ({why}; a fresh clone's data, few problems)",
    )


def authors_golds(data: Path) -> list[tuple[str, str]]:
    """(data_source, ground_truth) of every distinct problem of the authors' validation file."""
    from lie.formats.rows import read_rows

    rows = read_rows(data / VALIDATION, ("data_source", "reward_model", "extra_info"))
    seen, out = set(), []
    for row in rows:
        key = (row["data_source"], row["extra_info"]["index"])
        if key not in seen:
            seen.add(key)
            out.append((row["data_source"], row["reward_model"]["ground_truth"]))
    return out


def solution_texts(data: Path) -> list[str]:
    """Real worked solutions (reasoning text with LaTeX), their own boxed answers removed."""
    texts = []
    for name in SOLUTION_FILES:
        with open(data / "qwen25-math-eval" / name, encoding="utf-8") as handle:
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


def build_items(
    data: Path, seed: int, limit: int | None, pathological_items: bool = True
) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    golds = authors_golds(data)
    texts = solution_texts(data)
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
    bad = pathological(texts) if pathological_items else []
    for k, item in enumerate(bad):  # spread through the batch, not all at the end
        items.insert((k + 1) * len(items) // (len(bad) + 1), item)
    return items


def _burn(steps: int) -> float:
    start, total = time.perf_counter(), 0
    for i in range(steps):
        total += i
    return time.perf_counter() - start


def _best_wall(workers: int, repeats: int, steps: int) -> float:
    import multiprocessing

    with multiprocessing.get_context("forkserver").Pool(workers) as pool:
        pool.map(_burn, [steps // 100] * workers)  # start-up
        walls = []
        for _ in range(repeats):
            start = time.perf_counter()
            pool.map(_burn, [steps] * workers)
            walls.append(time.perf_counter() - start)
    return min(walls)


def cpu_ceiling(workers: int, repeats: int = 3, steps: int = 10_000_000) -> float:
    """The speed-up pure Python work gets from ``workers`` processes here, best of ``repeats`` (a VM
    may give less than its vCPU count): the pool's ratio on CPU-bound items is bounded by it."""
    return workers * _best_wall(1, repeats, steps) / _best_wall(workers, repeats, steps)


def describe(item: dict[str, Any]) -> str:
    response = item["response"]
    short = response if len(response) < 60 else response[:40] + f"... ({len(response):,} chars)"
    return f"{item['group']} gold={item['gold'][:30]!r} response={short!r}"


def verdict(met: bool) -> str:
    return "yes" if met else "NO"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=0, help="0: one per core")
    parser.add_argument("--timeout", type=float, default=20.0, help="hard limit per item, seconds")
    parser.add_argument("--limit", type=int, default=None, help="only the first N ordinary items")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--slices", action="store_true", help="grade the committed slices of tests/data/shared"
    )
    parser.add_argument("--quick", action="store_true", help="40 items, no pathological ones: seconds")
    args = parser.parse_args(argv)
    if args.limit is not None and args.limit < 1:
        parser.error(f"--limit must be at least 1, not {args.limit}")

    data, which = pick_data(args.slices)
    print(which)
    limit = min(args.limit or 40, 40) if args.quick else args.limit
    items = build_items(data, args.seed, limit, pathological_items=not args.quick)
    payload = [{k: v for k, v in item.items() if k != "group"} for item in items]
    groups = Counter(item["group"] for item in items)
    print(f"{len(items)} items: " + ", ".join(f"{k} {v}" for k, v in sorted(groups.items())))
    grade_item(payload[0])  # warm math-verify up in this process too
    workers = args.workers or default_workers()
    ceiling_before = cpu_ceiling(workers, repeats=1, steps=1_000_000) if args.quick else cpu_ceiling(workers)

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
    ceiling = ceiling_before if args.quick else (ceiling_before + cpu_ceiling(workers)) / 2
    ratio = loop_s / pool_s
    print(
        f"CPU ceiling:         {ceiling:8.2f}x ({workers} processes of pure Python vs one, "
        f"{'before' if args.quick else 'mean of before and after'}; a shared VM may give fewer than {workers} "
        f"cores) -> pool efficiency {ratio / ceiling:.0%}"
    )
    print(
        f"slowest item (pool): {pool[slowest].seconds:.2f} s, {pool[slowest].status}, {describe(items[slowest])}"
    )
    print(f"slowest item (loop): {loop[slowest_loop].seconds:.2f} s, {describe(items[slowest_loop])}")
    for name in ("right", "wrong", "pathological"):
        idx = [i for i, item in enumerate(items) if item["group"] == name]
        print(f"  {name:12s} correct {sum(pool[i].correct for i in idx):5d} / {len(idx)}")
    print("statuses (pool):", dict(Counter(r.status for r in pool)))
    print("statuses (loop):", dict(Counter(r.status for r in loop)))
    print(f"pool and loop disagree on {len(differ)} items" + (f": {differ[:10]}" if differ else ""))
    targets = {
        f"pool / loop {ratio:.2f}x >= 1.7x on 2 cores": ratio >= 1.7,
        f"slowest item {pool[slowest].seconds:.2f} s <= the limit + 1 s ({args.timeout + 1:g} s)": (
            pool[slowest].seconds <= args.timeout + 1
        ),
    }
    for target, met in targets.items():
        print(f"target {target}: {verdict(met)}")
    small = " (--quick: too few items to measure the targets)" if args.quick else ""
    small = small or (" (the slices: too few items to measure the targets)" if data == SLICES else "")
    print(f"bench_grade: every target met: {verdict(all(targets.values()))}{small}")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
