"""``lie snakemake``: every config file Snakemake would read, checked with lie's bounded YAML reader
(``lie.config.yamlio``: bounded nesting, aliases and integers), then Snakemake run with the same
arguments in this process (``exec``), from the environment ``lie`` runs in. Why: Snakemake reads
``--configfile`` files (and the Snakefile's default ``config.yaml``) with its own YAML loader before
any code of the workflow runs, so a hostile file would reach a Snakemake traceback or a hang.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from lie.core.errors import LieError

CONFIG_OPTIONS = ("--configfile", "--configfiles")
DIRECTORY_OPTIONS = ("--directory", "-d")


def config_files(args: list[str]) -> list[Path]:
    """The files Snakemake would read as configuration: every ``--configfile`` value, else the
    Snakefile's default ``config.yaml`` in the working directory (``--directory``) when it exists."""
    files: list[Path] = []
    directory = Path(".")
    k = 0
    while k < len(args):
        arg = args[k]
        name, eq, value = arg.partition("=")
        if name in CONFIG_OPTIONS:
            if eq:
                files.append(Path(value))
            else:
                k += 1
                start = k
                while k < len(args) and not args[k].startswith("-"):
                    files.append(Path(args[k]))
                    k += 1
                if k == start:
                    raise LieError(f"{arg} needs a file")
                continue
        elif name in DIRECTORY_OPTIONS:
            if eq:
                directory = Path(value)
            elif k + 1 < len(args):
                directory = Path(args[k + 1])
                k += 1
        k += 1
    if not files and (directory / "config.yaml").is_file():
        files.append(directory / "config.yaml")
    return files


def check_config_files(args: list[str]) -> list[Path]:
    """Each config file read with the bounded reader: a mapping, or one LieError naming file and line."""
    from lie.config.yamlio import load_yaml_mapping

    files = config_files(args)
    for path in files:
        load_yaml_mapping(path, what="config file")
    return files


def snakemake_program() -> str:
    """The ``snakemake`` of lie's own environment (beside its Python), else the one on PATH."""
    beside = Path(sys.executable).parent / "snakemake"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("snakemake")
    if found is None:
        raise LieError("snakemake is not installed in this environment (make venv installs it)")
    return found


def check_then_exec(args: list[str]) -> int:
    """Check the config files, then replace this process with Snakemake (it never returns then)."""
    check_config_files(args)
    program = snakemake_program()
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(program, [program, *args])
    return 0  # not reached
