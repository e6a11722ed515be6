"""make test's scheduling (tests/xdist_groups.py) under a real pytest-xdist run of sample modules."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from xdist_groups import LONGEST_FIRST, SHARED, group_of

TESTS = Path(__file__).resolve().parent
SAMPLE = """
import json, os, time

def _record(name):
    with open(os.environ["STARTS"], "a") as out:
        out.write(json.dumps([os.environ["PYTEST_XDIST_WORKER"], name, time.monotonic()]) + "\\n")

def test_one():
    _record(__name__ + "::test_one")
    time.sleep(0.4)

def test_two():
    _record(__name__ + "::test_two")
    time.sleep(0.4)
"""
MODULES = (
    "test_a",
    "test_verl_main_ppo",
    "test_b",
    "test_report",
    "test_c",
    "test_behaviours_cli",
    "test_smoke_e2e",
)


def test_group_names_follow_the_module_or_its_shared_run():
    assert (
        group_of("tests/test_verl_main_ppo.py::test_x") == group_of("tests/test_smoke_e2e.py::t") == "smoke"
    )
    assert group_of("tests/test_report.py::test_x[a::b]") == "report"
    assert group_of("tests/test_grading.py::test_x") == "test_grading"
    assert set(SHARED.values()) <= set(LONGEST_FIRST) and LONGEST_FIRST[0] == "smoke"


def test_two_workers_run_each_group_whole_and_the_longest_first(tmp_path):
    (tmp_path / "tests").mkdir()
    for name in MODULES:
        (tmp_path / "tests" / f"{name}.py").write_text(SAMPLE, encoding="utf-8")
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    starts = tmp_path / "starts.jsonl"
    env = {**os.environ, "STARTS": str(starts)}
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), env.get("PYTHONPATH", "")])
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "xdist_groups", "-p", "no:cacheprovider", "-q",
         "-n", "2", "--dist", "loadgroup", "tests"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    runs = sorted((json.loads(line) for line in starts.read_text().splitlines()), key=lambda run: run[2])
    assert len(runs) == 2 * len(MODULES)
    order = defaultdict(list)  # worker -> the modules of its tests, in the order they started
    for worker, name, _ in runs:
        order[worker].append(name.split("::")[0])
    groups = defaultdict(set)
    for worker, modules in order.items():
        for module in modules:
            groups[group_of(f"tests/{module}.py")].add(worker)
    assert len(order) == 2 and all(len(seen) == 1 for seen in groups.values()), dict(groups)  # whole groups
    # the two longest groups start at once, one a worker; the smoke DAG's own test before its readers
    assert {group_of(f"tests/{modules[0]}.py") for modules in order.values()} == {"smoke", "report"}
    (smoke,) = groups["smoke"]
    assert order[smoke][:2] == ["test_smoke_e2e", "test_smoke_e2e"]
