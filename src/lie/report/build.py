"""Write the whole report under ``results/<name>/`` so that it is all new or not there at all.

Every file is rendered into a staging folder beside the outputs first and moved into place
only when all of them are ready; the old outputs are removed before anything is read, so a
failure leaves no table or figure that looks complete but is stale or half-written (as
Snakemake, which also removes a failed job's outputs). Paths: :func:`report_paths`, the same
list as ``report_outputs()`` of ``workflow/rules/common.smk`` (a test keeps them equal), plus
``tables/dynamics.csv`` (per-step numbers behind ``figures/dynamics.png``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lie.layout import Layout
from lie.report import figures, render, tables
from lie.report.inputs import ReportData, collect
from lie.report.paper import Paper

log = logging.getLogger(__name__)


def report_paths(layout: Layout) -> list[Path]:
    """Every file of the report (the Snakemake rule declares exactly these: ``report_outputs()``)."""
    t, f = layout.tables, layout.figures
    return [
        *(t / f"main.{ext}" for ext in ("md", "csv", "tex")),
        t / "tts.csv",
        f / "tts.png",
        f / "dynamics.png",
        *(t / f"{name}.{ext}" for name in ("behaviours", "diversity") for ext in ("md", "csv")),
        t / "dynamics.csv",
    ]


def _writers(data: ReportData) -> dict[str, Callable[[Path], None]]:
    """Relative output path -> a function that writes it."""
    main = tables.main_rows(data)
    main_table = tables.main_table(data, main)
    source = str(data.layout.root)

    def text(content: str) -> Callable[[Path], None]:
        return lambda path: path.write_text(content, encoding="utf-8")

    title = f"Results of `{data.config.get('name', '')}` beside the paper"
    return {
        "tables/main.md": text(render.markdown(main_table, title)),
        "tables/main.csv": text(render.csv_text(main, tables.MAIN_COLUMNS)),
        "tables/main.tex": text(render.latex(main_table, source)),
        "tables/tts.csv": text(render.csv_text(tables.tts_rows(data), tables.TTS_COLUMNS)),
        "figures/tts.png": lambda path: figures.tts_figure(data, path),
        "figures/dynamics.png": lambda path: figures.dynamics_figure(data, path),
        "tables/behaviours.md": text(render.markdown(tables.behaviour_table(data), "Reasoning behaviours")),
        "tables/behaviours.csv": text(render.csv_text(tables.behaviour_rows(data), tables.BEHAVIOUR_COLUMNS)),
        "tables/diversity.md": text(
            render.markdown(tables.diversity_table(data), "Diversity across samples")
        ),
        "tables/diversity.csv": text(render.csv_text(tables.diversity_rows(data), tables.DIVERSITY_COLUMNS)),
        "tables/dynamics.csv": text(render.csv_text(tables.dynamics_rows(data), tables.DYNAMICS_COLUMNS)),
    }


def build_report(config: dict[str, Any], max_points: int = 200, paper: Paper | None = None) -> list[Path]:
    """Read the outputs under ``outdir``, write every table and figure; return the paths written."""
    layout = Layout(config)
    targets = report_paths(layout)
    for path in targets:
        path.unlink(missing_ok=True)
    data = collect(config, max_points=max_points, paper=paper)
    layout.root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".report-", suffix=".partial", dir=layout.root))
    moved: list[Path] = []
    try:
        writers = _writers(data)
        relative = {path: path.relative_to(layout.root).as_posix() for path in targets}
        missing = sorted(set(relative.values()) - set(writers))
        if missing:
            raise RuntimeError(f"no writer for {missing}")  # a programming error, not bad input
        for path in targets:
            staged = staging / relative[path]
            staged.parent.mkdir(parents=True, exist_ok=True)
            writers[relative[path]](staged)
            log.info("rendered %s", relative[path])
        for path in targets:
            path.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staging / relative[path], path)
            moved.append(path)
    except BaseException:
        for path in moved:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return targets
