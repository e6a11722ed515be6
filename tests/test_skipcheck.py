"""The CI skip check (tests/skipcheck.py) on a small test file run by a real pytest in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
SAMPLE = """
import pytest

def test_runs():
    pass

def test_needs_the_network():
    pytest.skip("offline")

@pytest.mark.skipif(True, reason="no browser")
def test_needs_a_browser():
    pass
"""


def run(root: Path, ci: str | None, *args: str, every_plugin: bool = False) -> subprocess.CompletedProcess:
    """pytest on the sample with the skip check (and pytest-xdist, for ``-n``); ``every_plugin``: with
    every installed plugin, as make test runs (~3 s of plugin loading a session, against ~0.3 s)."""
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    if ci is not None:
        env["CI"] = ci
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), env.get("PYTHONPATH", "")])
    plugins = ["-p", "skipcheck", "-p", "no:cacheprovider"]
    if not every_plugin:
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
        plugins += ["-p", "xdist.plugin"]
    return subprocess.run(
        [sys.executable, "-m", "pytest", *plugins, "-q", *args, "tests/test_sample.py"],
        cwd=root, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


@pytest.fixture
def root(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_sample.py").write_text(SAMPLE, encoding="utf-8")
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")  # the rootdir
    return tmp_path


def allow(root: Path, *lines: str) -> None:
    (root / "tests" / "skip_allowlist.txt").write_text("# why\n" + "\n".join(lines) + "\n", encoding="utf-8")


def test_an_unlisted_skip_fails_the_session_under_ci_and_is_named(root):
    allow(root, "tests/test_sample.py::test_needs_the_network  # offline")
    proc = run(root, "true")
    assert proc.returncode == 1, proc.stdout
    unexpected = [line for line in proc.stdout.splitlines() if line.startswith("unexpected skip")]
    assert unexpected == [
        "unexpected skip (CI=true): tests/test_sample.py::test_needs_a_browser; "
        f"not in {root / 'tests' / 'skip_allowlist.txt'}"
    ]
    assert "1 passed, 2 skipped" in proc.stdout


def test_listed_skips_pass_and_a_star_matches_any_text(root):
    allow(
        root,
        "tests/test_sample.py::test_needs_the_network  # offline",
        "tests/test_sample.py::test_needs_a_*",
    )
    proc = run(root, "true")
    assert proc.returncode == 0, proc.stdout
    assert "unexpected skip" not in proc.stdout


def test_without_ci_or_without_a_list(root):
    assert run(root, None).returncode == 0  # a developer's run: skips are reported, not failed
    proc = run(root, "true")  # no allow-list at all: every skip is unexpected
    assert proc.returncode == 1 and proc.stdout.count("unexpected skip") == 2


def test_on_two_workers_a_listed_skip_passes_and_an_unlisted_one_is_named(root):
    """make test's pytest-xdist run: the controller checks the skips its workers report."""
    allow(root, "tests/test_sample.py::test_needs_the_network  # offline")
    proc = run(root, "true", "-n", "2", "--dist", "loadgroup", every_plugin=True)
    assert proc.returncode == 1, proc.stdout
    unexpected = [line for line in proc.stdout.splitlines() if line.startswith("unexpected skip")]
    assert unexpected == [  # the listed skip is not named: one run checks both
        "unexpected skip (CI=true): tests/test_sample.py::test_needs_a_browser; "
        f"not in {root / 'tests' / 'skip_allowlist.txt'}"
    ]
    assert "1 passed, 2 skipped" in proc.stdout


def test_a_failing_test_keeps_its_own_status(root):
    (root / "tests" / "test_sample.py").write_text(SAMPLE + "\ndef test_fails():\n    assert False\n")
    proc = run(root, "true")
    assert proc.returncode == 1 and "1 failed" in proc.stdout and proc.stdout.count("unexpected skip") == 2


def test_the_repository_list_has_a_reason_on_every_line():
    lines = (TESTS / "skip_allowlist.txt").read_text(encoding="utf-8").splitlines()
    entries = [line for line in lines if line.strip() and not line.startswith("#")]
    assert entries and all("  # " in line and line.startswith("tests/test_") for line in entries), entries
