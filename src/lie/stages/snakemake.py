"""``lie snakemake``: every config file Snakemake would read, checked with lie's bounded YAML reader
(``lie.config.yamlio``: bounded nesting, aliases and integers), then Snakemake run with the same
arguments in this process (``exec``), from the environment ``lie`` runs in. Why: Snakemake reads
``--configfile`` files (and the Snakefile's default ``config.yaml``) with its own YAML loader before
any code of the workflow runs, so a hostile file would reach a Snakemake traceback or a hang.

Also what the workflow says once when it is read on the host that plans (``planning_notes``, called
from workflow/rules/train.smk): the Slurm site settings left unset, and that a dry run went on
without apptainer.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from lie.config.yamlio import load_yaml_mapping
from lie.core.errors import LieError

if TYPE_CHECKING:
    from lie.config.typed import Config

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


def check_then_exec(args: list[str]) -> NoReturn:
    """Check the config files, then replace this process with Snakemake."""
    check_config_files(args)
    program = snakemake_program()
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(program, [program, *args])


# ---- what the workflow says when it is read (workflow/rules/train.smk) ---------------------------

SITE_SETTINGS = {"account": "LIE_SLURM_ACCOUNT", "gpu_partition": "LIE_SLURM_GPU_PARTITION",
                 "cpu_partition": "LIE_SLURM_CPU_PARTITION"}  # fmt: skip


def invocation(workflow) -> Any | None:
    """This Snakemake command line as Snakemake reads it, its profile included (``executor``,
    ``dryrun``, ...): the Snakefile is read before Snakemake hands it the executor or says whether
    it is a dry run. None in a job's own Snakemake (inside Slurm) and where Snakemake runs as a
    library."""
    import contextlib
    import io

    from snakemake_interface_executor_plugins.settings import ExecMode

    if workflow.exec_mode != ExecMode.DEFAULT:
        return None
    try:
        from snakemake.cli import parse_args

        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            return parse_args(sys.argv[1:])[1]  # quiet: Snakemake has said which profile it reads
    except (Exception, SystemExit):
        return None


def unset_site_settings(config: Config, environ: Mapping[str, str] | None = None) -> list[str]:
    """The account and partitions of config's ``cluster:`` that neither a config file nor their
    environment variable sets: sbatch goes without them (the Slurm plugin guesses an account with
    sacctmgr, Slurm takes its default partition)."""
    environ = os.environ if environ is None else environ
    site = config.cluster
    return [
        f"cluster.{key} (${env})"
        for key, env in SITE_SETTINGS.items()
        if not (getattr(site, key) or environ.get(env))
    ]


def plan_without_apptainer() -> bool:
    """In a dry run: whether apptainer is missing, and if so Snakemake's check of it marked as done.
    Snakemake asks for apptainer's version before it plans a job of any image, even one on disk;
    the jobs still need it (a run without -n checks it)."""
    from snakemake.deployment.singularity import Singularity

    if shutil.which("apptainer") or shutil.which("singularity"):
        return False
    found = Singularity()  # Snakemake's one instance
    found.checked, found.binary = True, "apptainer"
    return True


def planning_notes(workflow: Any, config: Config, image: str) -> None:
    """On the host that plans (not in a job): one line naming the Slurm site settings left unset
    when the executor is Slurm; in a dry run that deploys the image, one line when apptainer is not
    on PATH (and the plan goes on without it)."""
    from snakemake_interface_executor_plugins.settings import DeploymentMethod

    args = invocation(workflow)
    if args is None:
        return
    if args.executor == "slurm" and (unset := unset_site_settings(config)):
        print(f"lie: Slurm site settings unset, left out of sbatch: {', '.join(unset)}", file=sys.stderr)
    deploys = DeploymentMethod.APPTAINER in workflow.deployment_settings.deployment_method
    if args.dryrun and image and deploys and plan_without_apptainer():
        print(
            "lie: apptainer is not on PATH: this dry run plans without it; the jobs need it", file=sys.stderr
        )
