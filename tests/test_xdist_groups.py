"""make test's scheduling (tests/xdist_groups.py) under a real pytest-xdist run of sample modules."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import pytest
from xdist_groups import LONGEST_FIRST, SHARED, group_of

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
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
    # pytest-xdist and our plugin alone (the others' loading: ~3 s a process, three processes)
    env = {**os.environ, "STARTS": str(starts), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), env.get("PYTHONPATH", "")])
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "xdist.plugin", "-p", "xdist_groups", "-p", "no:cacheprovider",
         "-q", "-n", "2", "--dist", "loadgroup", "tests"],
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


# a pytest plugin for the subprocess below: prints each collected smoke-asking test and its time limit
ASKERS_PLUGIN = """
import json

def pytest_collection_finish(session):
    limits = {}
    for item in session.items:
        if "smoke" in item.fixturenames:
            mark = item.get_closest_marker("timeout")
            limits[item.nodeid] = mark.args[0] if mark else None
    print("ASKERS", json.dumps(limits))
"""


def _smoke_askers(session: pytest.Session) -> dict[str, float | None]:
    """Test id -> its time limit, for each collected test that asks for the smoke run; where this session
    collected none of them (this module run alone), the smoke group's modules collected in a subprocess."""
    askers = {item.nodeid: (mark.args[0] if (mark := item.get_closest_marker("timeout")) else None)
              for item in session.items if "smoke" in getattr(item, "fixturenames", ())}  # fmt: skip
    if askers:
        return askers
    modules = [f"tests/{name}.py" for name, group in SHARED.items() if group == "smoke"]
    return _collect_with(ASKERS_PLUGIN, modules)


def _collect_with(plugin: str, modules: list[str]) -> dict[str, float | None]:
    with tempfile.TemporaryDirectory() as folder:
        Path(folder, "askers_plugin.py").write_text(plugin, encoding="utf-8")
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([folder, os.environ.get("PYTHONPATH", "")])}
        env.pop("PYTEST_XDIST_WORKER", None)
        proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "askers_plugin",
                               "-p", "no:cacheprovider", *modules], cwd=REPO, env=env, capture_output=True,
                              text=True, timeout=300)  # fmt: skip
    line = next((x for x in proc.stdout.splitlines() if x.startswith("ASKERS ")), None)
    assert line, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(line.removeprefix("ASKERS "))


def test_every_test_that_may_build_the_smoke_dag_allows_the_build_its_time(request):
    """Whichever test of the smoke group runs first builds the DAG in its setup (tests/smoke_run.py), so
    each test that asks for the run must allow the build's own time limit, not pytest's 600 s default."""
    from smoke_run import BUILD_TIMEOUT

    askers = _smoke_askers(request.session)
    assert len(askers) >= 4, askers
    short = [nodeid for nodeid, limit in askers.items() if limit is None or limit <= BUILD_TIMEOUT]
    assert not short, f"these may build the smoke DAG but stop before its {BUILD_TIMEOUT} s: {short}"
