"""``lie snakemake ARGS...``: check every config file with lie's bounded YAML reader, then run Snakemake.

Snakemake reads ``--configfile`` files (and the Snakefile's default ``config.yaml``) with its own
YAML loader before any code of the workflow runs, so a hostile file (nesting 2,000 deep, an
integer of 5,000 digits, a kilobyte of nested aliases) reaches a Snakemake traceback or a hang.
This door reads each such file first with ``lie.config.yamlio`` (bounded nesting, aliases and
integers): a bad file is one line and exit 2; then Snakemake runs with the same arguments, in
this process (``exec``), from the environment ``lie`` runs in.

Examples: ``lie snakemake --configfile workflow/configs/smoke.yaml --profile profiles/local -c2``;
``lie snakemake -n`` (the paper's matrix, config.yaml).
"""

from __future__ import annotations

from lie.stages.snakemake import check_then_exec

HELP = """\
usage: lie snakemake [SNAKEMAKE ARGUMENTS...]

Run Snakemake with the same arguments, after reading every --configfile (else the Snakefile's
config.yaml) with lie's bounded YAML reader: a bad file is one line and exit 2, where Snakemake's own
loader would print a traceback or hang. Snakemake then runs in this process, from the environment lie
runs in.

examples:
  lie snakemake --configfile workflow/configs/smoke.yaml --profile profiles/local -c2
  lie snakemake -n                                   the paper's matrix (config.yaml), a dry run
  lie snakemake --profile profiles/slurm             the paper's matrix on a Slurm cluster

Snakemake's own options: python -m snakemake --help
"""


def run_raw(args: list[str]) -> int:
    """Check the config files, then replace this process with Snakemake (``lie.stages.snakemake``)."""
    if args[:1] in (["-h"], ["--help"]):
        print(HELP, end="")
        return 0
    return check_then_exec(args)
