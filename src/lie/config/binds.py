"""What a container sees of the host besides the checkout and the hub cache.

Every ``apptainer exec`` of the pipeline (Snakemake's ``apptainer-args`` in the profiles, the train
job's launcher ``workflow/scripts/launch_lib.sh``) binds ``$PWD`` and ``$HF_HOME``; an ``outdir`` on
scratch, or ``results/`` as a link there (the usual layout where home quotas are small), would be
invisible inside the image. :func:`bind_option` adds the outdir, its real path and
``cluster.binds``; the Snakefile exports it (:func:`export`) as ``LIE_APPTAINER_BINDS``, which
both read.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from lie.core.errors import LieError

if TYPE_CHECKING:
    from lie.config.typed import Config

# apptainer's --bind reads "src[:dest[:opts]]" items separated by commas
UNBINDABLE = (",", ":")


def container_binds(config: Config) -> list[str]:
    """The outdir (as written, made absolute), its real path, then ``cluster.binds``; no repeats."""
    written = os.path.abspath(config.outdir)
    paths = [written, os.path.realpath(written), *config.cluster.binds]
    for path in paths[:2]:
        if any(c in path for c in UNBINDABLE) or any(c.isspace() for c in path):
            raise LieError(
                f"outdir: {path}: apptainer cannot bind a path holding ',', ':' or white space; "
                "choose another outdir (or a link to it without them)"
            )
    return list(dict.fromkeys(paths))


def bind_option(config: Config) -> str:
    """``--bind a,b,...``: one option for every apptainer command line, as one shell word after it."""
    return "--bind " + ",".join(container_binds(config))


def export(config: Config) -> None:
    """Set ``LIE_APPTAINER_BINDS`` for every process this one starts (jobs, their containers)."""
    os.environ["LIE_APPTAINER_BINDS"] = bind_option(config)
