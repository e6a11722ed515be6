"""``make coverage``'s report: the per-module table of src/lie, and the unexecuted lines of
``engines/`` and ``stages/`` that ``tests/coverage/gpu_only.yaml`` does not list.

Usage: python tests/coverage/report.py DATA_DIR TABLE.md. Combines the data files coverage.py wrote in
DATA_DIR (one per process), writes the table, prints every unlisted unexecuted line, and exits 1 when
there is one: only lines that need CUDA, NVIDIA's driver or a real Slurm controller may stay
unexecuted, each listed with why.
"""

from __future__ import annotations

import datetime
import os
import platform
import sys
from pathlib import Path

import coverage
import yaml

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src" / "lie"
GPU_ONLY = Path(__file__).with_name("gpu_only.yaml")
CHECKED = ("engines", "stages")


def gpu_only() -> dict[str, set[str]]:
    """file (relative to src/lie) -> the stripped texts of its listed lines."""
    listed: dict[str, set[str]] = {}
    for entry in yaml.safe_load(GPU_ONLY.read_text(encoding="utf-8")) or []:
        listed.setdefault(entry["file"], set()).add(entry["line"].strip())
    return listed


def analyse(data_dir: Path) -> dict[str, tuple[int, list[int]]]:
    """src/lie's files (relative) -> (statements, unexecuted line numbers); unimported files count whole."""
    os.environ.setdefault("LIE_COVERAGE_SRC", str(SRC))  # what .coveragerc reads
    os.environ.setdefault("LIE_COVERAGE_DATA", str(data_dir))
    cov = coverage.Coverage(data_file=str(data_dir / ".coverage"), config_file=str(REPO / ".coveragerc"))
    cov.combine([str(data_dir)], keep=False)
    cov.load()
    measured = {Path(f).resolve(): f for f in cov.get_data().measured_files()}
    result = {}
    for path in sorted(SRC.rglob("*.py")):
        name = str(path.relative_to(SRC))
        if path.resolve() in measured:
            _, statements, _, missing, _ = cov.analysis2(measured[path.resolve()])
        else:
            statements = [n for n, _ in _statements(path)]
            missing = statements
        result[name] = (len(statements), list(missing))
    return result


def _statements(path: Path) -> list[tuple[int, str]]:
    from coverage.python import PythonParser

    parser = PythonParser(filename=str(path))
    parser.parse_source()
    lines = path.read_text(encoding="utf-8").splitlines()
    return [(n, lines[n - 1]) for n in sorted(parser.statements)]


def table(result: dict[str, tuple[int, list[int]]], unlisted: dict[str, list[int]]) -> str:
    rows = ["| module | statements | unexecuted | covered | unexecuted, not GPU-only (engines/, stages/) |",
            "|---|---:|---:|---:|---:|"]  # fmt: skip
    total = missed = 0
    for name, (statements, missing) in result.items():
        total, missed = total + statements, missed + len(missing)
        share = 100 * (statements - len(missing)) / statements if statements else 100.0
        open_lines = len(unlisted.get(name, [])) if name.startswith(CHECKED) else ""
        rows.append(f"| `{name}` | {statements} | {len(missing)} | {share:.0f}% | {open_lines} |")
    share = 100 * (total - missed) / total if total else 100.0
    rows.append(f"| **total** | {total} | {missed} | {share:.1f}% | {sum(map(len, unlisted.values()))} |")
    when = datetime.date.today().isoformat()
    head = (f"# Coverage of `src/lie` under `make test` ({when}, {platform.machine()}, `make coverage`)\n\n"
            "Every Python process the tests start is measured (tests/coverage/report.py). The last column\n"
            "counts the unexecuted lines of `engines/` and `stages/` that tests/coverage/gpu_only.yaml does\n"
            "not list as needing CUDA, NVIDIA's driver or a real Slurm controller.\n\n")  # fmt: skip
    return head + "\n".join(rows) + "\n"


def main(argv: list[str]) -> int:
    data_dir, out = Path(argv[0]), Path(argv[1])
    result = analyse(data_dir)
    listed = gpu_only()
    unlisted: dict[str, list[int]] = {}
    for name, (_, missing) in result.items():
        if not name.startswith(CHECKED):
            continue
        lines = (SRC / name).read_text(encoding="utf-8").splitlines()
        open_lines = [n for n in missing if lines[n - 1].strip() not in listed.get(name, set())]
        if open_lines:
            unlisted[name] = open_lines
    out.write_text(table(result, unlisted), encoding="utf-8")
    for name, numbers in unlisted.items():
        lines = (SRC / name).read_text(encoding="utf-8").splitlines()
        for n in numbers:
            print(f"unexecuted, not listed: src/lie/{name}:{n}: {lines[n - 1].strip()}")
    count = sum(map(len, unlisted.values()))
    print(f"coverage table: {out}; {count} unexecuted line(s) of engines/ and stages/ not listed as GPU-only")
    return 1 if count else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
