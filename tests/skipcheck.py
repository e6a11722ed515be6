"""A pytest plugin: with CI=true, a skip that tests/skip_allowlist.txt does not allow fails the session.

A skip hides a test that did not run; on a fresh clone only the tests that need what a clone cannot
have (the network, a browser, files outside the repository) may skip, each listed with its reason.
tests/conftest.py loads the hooks; tests/test_skipcheck.py runs them on a small test file.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ALLOWLIST = Path("tests") / "skip_allowlist.txt"  # under the rootdir
_BAD = pytest.StashKey[tuple]()


def read_allowlist(path: Path) -> list[re.Pattern[str]]:
    """One test-id pattern a line (`*` for any text), `#` to the end of a line a comment."""
    patterns = []
    for line in path.read_text(encoding="utf-8").splitlines():
        text = line.split("#", 1)[0].strip()
        if text:
            patterns.append(re.compile(".*".join(re.escape(part) for part in text.split("*"))))
    return patterns


def unexpected(nodeids: list[str], patterns: list[re.Pattern[str]]) -> list[str]:
    return [n for n in nodeids if not any(p.fullmatch(n) for p in patterns)]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if os.environ.get("CI") != "true" or hasattr(session.config, "workerinput"):
        return  # under pytest-xdist the controller checks: it receives every worker's reports
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = [r.nodeid for r in reporter.stats.get("skipped", [])] if reporter else []
    allowlist = session.config.rootpath / ALLOWLIST
    patterns = read_allowlist(allowlist) if allowlist.exists() else []
    bad = unexpected(sorted(set(skipped)), patterns)
    session.config.stash[_BAD] = (bad, allowlist)
    if bad and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    bad, allowlist = config.stash.get(_BAD, ([], None))
    if bad:
        terminalreporter.section("skips not in the allow-list", red=True)
        for nodeid in bad:
            terminalreporter.write_line(f"unexpected skip (CI=true): {nodeid}; not in {allowlist}")
