"""Check a ``pip install --dry-run --report`` of envs/gpu.lock: everything pinned resolves as pinned.

Usage: python envs/scripts/check_gpu_report.py REPORT.json envs/gpu.lock
"""

from __future__ import annotations

import json
import sys

STACK = {"verl": "0.9.1", "vllm": "0.24.0", "torch": "2.11.0", "transformers": "5.9.0"}


def _norm(name: str) -> str:
    return name.lower().replace("_", "-")


def main(argv: list[str]) -> int:
    report, lock = argv[1], argv[2]
    resolved = {
        _norm(i["metadata"]["name"]): i["metadata"]["version"] for i in json.load(open(report))["install"]
    }
    pinned = {}
    for line in open(lock, encoding="utf-8"):
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            pinned[_norm(name)] = version
    problems = [
        f"{n}: pinned {v}, resolved {resolved.get(n)}" for n, v in pinned.items() if resolved.get(n) != v
    ]
    problems += [
        f"{n}: the verl[vllm] stack needs {v}, lock has {pinned.get(n)}"
        for n, v in STACK.items()
        if pinned.get(n) != v
    ]
    for problem in problems:
        print(problem, file=sys.stderr)
    if not problems:
        print(
            f"envs/gpu.lock resolves: {len(resolved)} packages; "
            + ", ".join(f"{n} {resolved[n]}" for n in STACK)
        )
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
