"""Stand-ins for the cluster's command-line tools (sbatch, srun, scontrol, apptainer, ...) in tests."""

from __future__ import annotations

from pathlib import Path


def write_tools(bin_dir: Path, tools: dict[str, str]) -> Path:
    """Each ``name: bash body`` as an executable script ``bin_dir/name``; returns ``bin_dir`` (for PATH)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name, body in tools.items():
        path = bin_dir / name
        path.write_text("#!/usr/bin/env bash\n" + body + "\n")
        path.chmod(0o755)
    return bin_dir
