"""``make bench`` on a fresh clone: without ../shared/data every script it runs still runs, says which
data it read, and answers each of its targets with yes or NO (docs/benchmarks.md).

``make bench BENCH_ARGS=--quick`` as a user types it (small sizes: seconds), with ``LIE_SHARED_DATA``
pointing at a folder that does not exist, so that bench_grade.py falls back to the committed slices of
tests/data/shared. Only that the scripts run and answer is checked: a verdict here is no measurement
(docs/benchmarks.md; no timing is asserted).
"""

from __future__ import annotations

import os
import re
import subprocess

from small import REPO

STAMP = ".venv/.installed"  # the environment the tests run in: make must not rebuild it under them
TARGET = re.compile(r"^target .+: (yes|NO)$", re.M)
SUMMARY = re.compile(r"^(bench_\w+): every target met: (yes|NO)(.*)$", re.M)


def make(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "-o", STAMP, *args], cwd=REPO, env=env or os.environ.copy(),
                          capture_output=True, text=True, timeout=600)  # fmt: skip


def bench_scripts() -> list[str]:
    """The scripts ``make bench`` runs, as make prints them (``-n``: nothing runs)."""
    proc = make("-n", "bench")
    assert proc.returncode == 0, proc.stderr
    return re.findall(r"benchmarks/(bench_\w+)\.py", proc.stdout)


def test_make_bench_runs_without_shared_data_and_answers_every_target(tmp_path):
    scripts = bench_scripts()
    assert scripts, "make bench runs no benchmark script"
    env = {**os.environ, "LIE_SHARED_DATA": str(tmp_path / "no-shared-data")}
    proc = make("bench", "BENCH_ARGS=--quick", env=env)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    assert "Traceback" not in proc.stderr
    # one block of output per script: its data line first, its summary line last
    blocks = re.split(r"^(?=data: )", proc.stdout, flags=re.M)[1:]
    assert [SUMMARY.search(block).group(1) for block in blocks] == scripts
    for script, block in zip(scripts, blocks):
        first = block.splitlines()[0]  # the data it used, in one line (it names a path: no length bound)
        assert first.startswith("data: ") and (
            "absent" in first or "no data" in first or "full files" in first
        ), block
        assert TARGET.findall(block), f"{script} answers no target with yes or NO:\n{block}"
        assert SUMMARY.search(block).group(3).startswith(" ("), block  # a quick run says it measures nothing
    grade = blocks[scripts.index("bench_grade")]
    assert grade.startswith("data: the committed slices of tests/data/shared (")
    assert str(tmp_path / "no-shared-data") in grade.splitlines()[0]  # and why: the full files are absent
    assert "pool and loop disagree on 0 items" in grade


def test_bench_grade_reads_the_full_files_where_they_are_and_the_slices_when_forced(tmp_path, monkeypatch):
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_grade", REPO / "benchmarks" / "bench_grade.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    full = tmp_path / "shared-data"
    for name in bench.NEEDED:  # a complete copy of the files it reads, as ../shared/data holds them
        (full / name).parent.mkdir(parents=True, exist_ok=True)
        (full / name).write_bytes((bench.SLICES / name).read_bytes())
    monkeypatch.setenv("LIE_SHARED_DATA", str(full))
    assert bench.pick_data() == (full, f"data: the full files of {full}")
    folder, line = bench.pick_data(force_slices=True)
    assert folder == bench.SLICES and "(--slices;" in line
    (full / bench.NEEDED[-1]).unlink()  # one file short: the slices, and the line names the absent file
    folder, line = bench.pick_data()
    assert folder == bench.SLICES and f"{full / bench.NEEDED[-1]} is absent" in line
    golds = bench.authors_golds(bench.SLICES)
    assert len(golds) == 39 and all(gold for _, gold in golds)  # every distinct problem of the slice
