"""Write the whole report under ``results/<name>/`` so that it is all new or not there at all.

Every input is read and checked, and every file rendered into a staging folder beside the
outputs, before any old output is touched: bad input leaves the previous report as it was, and a
failure while moving the new files in leaves none of them (never a half-written one). Paths: :func:`report_paths`, the same
list as ``report_outputs()`` of ``workflow/rules/common.smk`` (a test keeps them equal): one
``tables/<table>.{md,csv,tex,html}`` for each table of :mod:`lie.report.groups` that has a row (``main``,
``families``, ``scale``, ``ablation``, ``sensitivity``), ``tables/lengths.{md,csv,html}`` and
``figures/lengths.png`` (mean response length at evaluation), test-time scaling, dynamics,
behaviours and diversity (``.md``, ``.csv`` and ``.html``). Each ``.html`` is the ``.md``'s table as a
page of its own, which ``snakemake --report`` shows in its page (the others are downloads there).
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from lie.config.layout import Layout
from lie.config.typed import Config
from lie.core.errors import LieError
from lie.formats.outputs import signals_held
from lie.report import figures, render, tables
from lie.report.groups import TABLES, table_keys, tables_of
from lie.report.inputs import ReportData, collect
from lie.report.paper import Paper

log = logging.getLogger(__name__)


def report_paths(layout: Layout) -> list[Path]:
    """Every file of the report (the Snakemake rule declares exactly these: ``report_outputs()``)."""
    t, f = layout.tables, layout.figures
    return [
        *(t / f"{name}.{ext}" for name in tables_of(layout.config) for ext in ("md", "csv", "tex", "html")),
        *(t / f"lengths.{ext}" for ext in ("md", "csv", "html")),
        f / "lengths.png",
        t / "tts.csv",
        f / "tts.png",
        f / "dynamics.png",
        *(t / f"{name}.{ext}" for name in ("behaviours", "diversity") for ext in ("md", "csv", "html")),
        t / "dynamics.csv",
    ]


def _text(content: str) -> Callable[[Path], None]:
    def write(path: Path) -> None:
        path.write_text(content, encoding="utf-8")

    return write


def _shown(name: str, table: render.Table, title: str) -> dict[str, Callable[[Path], None]]:
    """``tables/<name>.md`` and ``tables/<name>.html``: the same table, title, caption and notes."""
    return {
        f"tables/{name}.md": _text(render.markdown(table, title)),
        f"tables/{name}.html": _text(render.html(table, title)),
    }


def _result_writers(data: ReportData) -> dict[str, Callable[[Path], None]]:
    """``tables/<table>.{md,csv,tex,html}`` of every table with a row."""
    out: dict[str, Callable[[Path], None]] = {}
    source = str(data.layout.root)
    name_of = data.config.name
    columns: tuple[str, ...]
    for name, keys in table_keys(data.config, data.keys).items():
        if name == "sensitivity":
            rows = tables.sensitivity_rows(data, keys)
            table = tables.sensitivity_table(data, rows)
            columns = tables.SENSITIVITY_COLUMNS
        else:
            rows = tables.result_rows(data, keys, name)
            table = tables.result_table(data, keys, rows)
            columns = tables.RESULT_COLUMNS
        title = f"{TABLES[name]}: `{name_of}` beside the paper"
        out.update(_shown(name, table, title))
        out[f"tables/{name}.csv"] = _text(render.csv_text(rows, columns))
        out[f"tables/{name}.tex"] = _text(render.latex(table, source))
    return out


def _writers(data: ReportData) -> dict[str, Callable[[Path], None]]:
    """Relative output path -> a function that writes it."""
    lengths = tables.length_rows(data)
    text = _text
    return {
        **_result_writers(data),
        **_shown("lengths", tables.length_table(data, lengths), "Response length at evaluation"),
        "tables/lengths.csv": text(render.csv_text(lengths, tables.LENGTH_COLUMNS)),
        "figures/lengths.png": lambda path: figures.lengths_figure(data, lengths, path),
        "tables/tts.csv": text(render.csv_text(tables.tts_rows(data), tables.TTS_COLUMNS)),
        "figures/tts.png": lambda path: figures.tts_figure(data, path),
        "figures/dynamics.png": lambda path: figures.dynamics_figure(data, path),
        **_shown("behaviours", tables.behaviour_table(data), "Reasoning behaviours"),
        "tables/behaviours.csv": text(render.csv_text(tables.behaviour_rows(data), tables.BEHAVIOUR_COLUMNS)),
        **_shown("diversity", tables.diversity_table(data), "Diversity across samples"),
        "tables/diversity.csv": text(render.csv_text(tables.diversity_rows(data), tables.DIVERSITY_COLUMNS)),
        "tables/dynamics.csv": text(render.csv_text(tables.dynamics_rows(data), tables.DYNAMICS_COLUMNS)),
    }


def _swap_in(staging: Path, relative: dict[Path, str]) -> None:
    """Put the staged files in place of the report's, all or none: each new file is first copied beside
    its target (same folder, so that the final rename never crosses a file system), each old one renamed
    aside; any failure or interrupt puts every old file back, and no file of the user is ever deleted."""
    pid = os.getpid()
    beside: dict[Path, Path] = {}
    aside: dict[Path, Path] = {}
    placed: list[Path] = []
    try:
        for path, rel in relative.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            beside[path] = path.with_name(f".{path.name}.new-{pid}")
            shutil.copyfile(staging / rel, beside[path])
    except BaseException:  # a failure or a kill (Ctrl-C, SIGTERM) while copying: the old report is untouched
        for new in beside.values():
            new.unlink(missing_ok=True)
        raise
    with signals_held():  # the renames and their undoing are never cut in the middle by a kill
        try:
            for path in relative:
                if os.path.lexists(path):
                    aside[path] = path.with_name(f".{path.name}.old-{pid}")
                    os.replace(path, aside[path])
                os.replace(beside[path], path)
                placed.append(path)
        except BaseException:
            for path in placed:
                if path not in aside:  # a file the report added: nothing to put back
                    path.unlink(missing_ok=True)
            for path, old in aside.items():
                if os.path.lexists(old):
                    os.replace(old, path)
            for new in beside.values():
                new.unlink(missing_ok=True)
            raise
        for old in aside.values():
            old.unlink(missing_ok=True)


def build_report(config: Config, max_points: int = 200, paper: Paper | None = None) -> list[Path]:
    """Read the outputs under ``outdir``, write every table and figure; return the paths written."""
    layout = Layout(config)
    targets = report_paths(layout)
    data = collect(config, max_points=max_points, paper=paper)
    layout.root.mkdir(parents=True, exist_ok=True)
    folders = [path for path in targets if path.is_dir()]
    if folders:
        raise LieError(f"{folders[0]} is a folder where the report writes a file; move it away and rerun")
    staging = Path(tempfile.mkdtemp(prefix=".report-", suffix=".partial", dir=layout.root))
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
        # a file the user linked elsewhere stays a link: the new report goes where it points
        _swap_in(
            staging, {Path(os.path.realpath(p)) if p.is_symlink() else p: rel for p, rel in relative.items()}
        )
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return targets
