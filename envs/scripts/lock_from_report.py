"""Write a pinned requirements file from ``pip install --dry-run --report`` output.

Usage: python envs/scripts/lock_from_report.py REPORT.json OUT.lock "header line" [REQUIREMENTS.in]
Direct-URL requirements of REQUIREMENTS.in (``name @ https://...``, prebuilt wheels that are not on
the package index and were left out of the resolution) are appended to the lock as they are.
"""

from __future__ import annotations

import json
import sys


def direct_urls(path: str) -> list[str]:
    lines = (line.split("#", 1)[0].strip() for line in open(path, encoding="utf-8"))
    return [line for line in lines if " @ " in line]


def main(argv: list[str]) -> int:
    report, out, header = argv[1], argv[2], argv[3]
    items = json.load(open(report, encoding="utf-8"))["install"]
    pins = sorted(f"{i['metadata']['name']}=={i['metadata']['version']}" for i in items)
    urls = direct_urls(argv[4]) if len(argv) > 4 else []
    with open(out, "w", encoding="utf-8") as handle:
        handle.write(f"# {header}\n")
        handle.writelines(pin + "\n" for pin in pins)
        if urls:
            handle.write("# Prebuilt wheels by URL (from the .in file, not resolved from the index):\n")
            handle.writelines(url + "\n" for url in urls)
    print(f"{out}: {len(pins)} pins, {len(urls)} direct URLs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
