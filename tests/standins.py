"""Stand-ins for the cluster's command-line tools (sbatch, srun, scontrol, apptainer, ...) in tests."""

from __future__ import annotations

import subprocess
from pathlib import Path


def write_tools(bin_dir: Path, tools: dict[str, str]) -> Path:
    """Each ``name: bash body`` as an executable script ``bin_dir/name``; returns ``bin_dir`` (for PATH)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name, body in tools.items():
        path = bin_dir / name
        path.write_text("#!/usr/bin/env bash\n" + body + "\n")
        path.chmod(0o755)
    return bin_dir


def start(cmd: list[str], folder: Path, **popen) -> subprocess.Popen:
    """``cmd`` started with its output to ``folder/command.{out,err}``: several stand-in runs at once."""
    with open(folder / "command.out", "w") as stdout, open(folder / "command.err", "w") as stderr:
        return subprocess.Popen(cmd, stdout=stdout, stderr=stderr, text=True, **popen)


def finish(proc: subprocess.Popen, folder: Path, timeout: float = 300) -> tuple[int, str]:
    """Wait for a run of :func:`start`: its exit status and its output (stdout, then stderr)."""
    returncode = proc.wait(timeout=timeout)
    return returncode, (folder / "command.out").read_text() + (folder / "command.err").read_text()
