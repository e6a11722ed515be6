"""The report (``lie report``): tables and figures beside the paper's numbers, from files only.

``lie.report`` reads the outputs under ``outdir`` and writes every table and figure, all or none;
this stage is the door the command goes through (a command imports stages only).
"""

from __future__ import annotations

from pathlib import Path

from lie.config.typed import Config
from lie.report.build import build_report


def report(config: Config, max_points: int = 200) -> list[Path]:
    """Write the report's tables and figures; return their paths."""
    return build_report(config, max_points=max_points)
