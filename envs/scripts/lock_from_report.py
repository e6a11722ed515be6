"""Write a pinned requirements file from ``pip install --dry-run --report`` output.

Usage: python envs/scripts/lock_from_report.py REPORT.json OUT.lock "header line"
"""

from __future__ import annotations

import json
import sys


def main(argv: list[str]) -> int:
    report, out, header = argv[1], argv[2], argv[3]
    items = json.load(open(report, encoding="utf-8"))["install"]
    pins = sorted(f"{i['metadata']['name']}=={i['metadata']['version']}" for i in items)
    with open(out, "w", encoding="utf-8") as handle:
        handle.write(f"# {header}\n")
        handle.writelines(pin + "\n" for pin in pins)
    print(f"{out}: {len(pins)} pins")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
