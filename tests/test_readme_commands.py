"""Every command README.md shows in its shell blocks, walked in order, as written.

Each command is run here when it is cheap (`lie plan`, `lie --help`, `make dry-run`, `make lint`),
as a dry run when it would book a cluster (the Slurm launches, with `-n`), or, when it is a long
target that another test runs through the same door, checked with `make -n` (its recipe resolves)
and named with that test. A command the README gains without a way here fails the walk.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

# long make targets: run by another test through the same door (or by CI itself); here `make -n`
ELSEWHERE = {
    "smoke": "tests/test_smoke_e2e.py (the smoke DAG, once per pytest run)",
    "test": "CI (.ci/run runs make test)",
    "test-all": "make test plus the heavy mark",
    "study": "tests/test_study.py (the study DAG, shrunk)",
    "bench": "tests/test_bench_fallback.py (make bench BENCH_ARGS=--quick)",
    "report": "tests/test_make_report.py (make report on the smoke DAG)",
    "check-gpu-env": "needs the package index (a pip dry run over envs/gpu.lock)",
    "venv": "builds .venv (make test's first step)",
}
RUN_HERE = {"dry-run", "lint"}


def readme_commands() -> list[str]:
    """The commands of README's ```bash blocks, in order: comments dropped, continued lines joined."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    commands = []
    for block in re.findall(r"^```bash\n(.*?)^```", text, flags=re.S | re.M):
        joined = re.sub(r"\\\n\s*", "", block)
        for line in joined.splitlines():
            command = re.sub(r"\s+#.*$", "", line).strip()
            if command and not command.startswith("#"):
                commands.append(command)
    return commands


def shell(command: str, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}", "PWD": str(REPO), "HF_HUB_OFFLINE": "1"}
    return subprocess.run(["bash", "-c", command], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=timeout)  # fmt: skip


def how(command: str) -> tuple[str, str]:
    """How the walk runs ``command``: (the shell command it runs, what that proves)."""
    make = re.fullmatch(r"make ([\w-]+)", command)
    if make:
        target = make.group(1)
        if target in RUN_HERE:
            return command, "run as written"
        if target in ELSEWHERE:
            return f"make -n {target}", f"recipe resolves; run by {ELSEWHERE[target]}"
    if re.fullmatch(r"\.venv/bin/lie (plan|--help)", command):
        return command, "run as written"
    if " lie snakemake --profile profiles/slurm" in command:
        return f"{command} -n", "a dry run of the Slurm launch"
    raise AssertionError(f"README shows `{command}`, which this walk has no way to run: add one")


def test_the_readme_shows_the_commands_this_walk_knows():
    commands = readme_commands()
    assert commands[:2] == ["make smoke", "make test"]  # the two commands README starts with
    for command in commands:
        how(command)


@pytest.mark.parametrize("command", readme_commands())
def test_each_readme_command_runs_as_written(command):
    run, proves = how(command)
    proc = shell(run)
    assert proc.returncode == 0, f"{run} ({proves}):\n{(proc.stdout + proc.stderr)[-3000:]}"
    assert "Traceback" not in proc.stderr
    if "lie snakemake" in run:
        assert "train" in proc.stdout and "Job stats" in proc.stdout, proc.stdout[-2000:]
