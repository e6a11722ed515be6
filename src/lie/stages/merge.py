"""Merging (``lie merge RUN``): the run's evaluated checkpoint (``final.json``) as a Hugging Face folder.

verl checkpoints (FSDP shards) go through ``python -m verl.model_merger merge``, in the environment that
trained them; TRL checkpoints
are already in Hugging Face format and are copied. The output folder appears only when complete,
with the modes the user's umask gives (safetensors writes 0600).
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
from pathlib import Path

from lie.config.layout import Layout
from lie.config.typed import Config
from lie.core.errors import LieError
from lie.engines.trl.train import export_model
from lie.engines.verl.checkpoints import checkpoint_problem
from lie.formats.model_folder import WEIGHTS, check_model_folder, write_failure
from lie.formats.outputs import check_output_folder, partial_folder, read_object, replace_folder
from lie.formats.runs import RunDir, read_final
from lie.stages.train import verl_python

log = logging.getLogger(__name__)


def _merger_python(config: Config, rundir: RunDir) -> str:
    """The Python of the environment that trained the run: FSDP shards hold pickled DeviceMeshes that
    another torch cannot read (a run with ``cpu_rollout: vllm`` trained under .venv-vllm's torch 2.11;
    .venv's 2.13 fails on its ``_MeshLayout``)."""
    record: dict | None = {}
    if os.path.lexists(rundir.run_json):
        record, why = read_object(rundir.run_json)
        if record is None:
            raise LieError(
                f"{rundir.run_json}: not the record lie train writes ({why}); rerun `lie train {rundir.run}`"
            )
    device = record.get("device", "gpu") if record else "gpu"
    return verl_python(config, config.run(rundir.run), device) or sys.executable


def merge(config: Config, run: str, out: str | Path | None = None) -> Path:
    layout = Layout(config)
    rundir = layout.run_dir(run)
    read_final(rundir)
    with rundir.lock(f"merge {run}"):
        return _merge(config, layout, rundir, out)


def _merge(config: Config, layout: Layout, rundir: RunDir, out: str | Path | None) -> Path:
    run = rundir.run
    engine, checkpoint = read_final(rundir)
    target = Path(out) if out else layout.merged_model(run)
    check_output_folder(target, [rundir.root])
    model = config.experiments[run].model if run in config.experiments else None  # its evaluation switches
    record = {"command": "merge", "run": run, "model": model, "checkpoint": str(checkpoint)}
    if engine == "trl":
        tmp = partial_folder(target)
        export_model(checkpoint, tmp)
        check_model_folder(tmp)  # the weights the architecture needs, before the folder appears
        return replace_folder(tmp, target, record)

    problem = checkpoint_problem(checkpoint)
    if problem:
        raise LieError(f"{checkpoint} is incomplete ({problem}); rerun `lie train {run}` to repair it")
    python = _merger_python(config, rundir)  # run.json read before anything is written
    tmp = partial_folder(target)
    cmd = [python, "-m", "verl.model_merger", "merge", "--backend", "fsdp",
           "--local_dir", str(checkpoint / "actor"), "--target_dir", str(tmp)]  # fmt: skip
    if config.trust_remote_code:
        cmd.append("--trust-remote-code")
    proc = subprocess.run(cmd, stderr=subprocess.PIPE, text=True, errors="replace")
    if proc.stderr:
        log.debug("verl.model_merger's standard error:\n%s", proc.stderr[-20000:])
    if proc.returncode != 0:
        raise merger_failure(proc.returncode, proc.stderr, checkpoint, tmp, target)
    check_model_folder(tmp)
    return replace_folder(tmp, target, record)


_NAMED = re.compile(r"""^(\w+(?:\.\w+)*(?:Error|Exception)): (?:\[Errno \d+\] )?(.*?)(?:: '([^']+)')?$""")


def merger_failure(code: int, stderr: str, checkpoint: Path, tmp: Path, target: Path) -> LieError:
    """verl's merger exited ``code``: one line with the last line of its error output (the exception it
    died of), naming the file it could not write when the disk was full. Its folder stays ``.partial``:
    ``target`` never appears half-written (``--log-level DEBUG`` shows the merger's whole output)."""
    lines = [line.strip() for line in (stderr or "").splitlines() if line.strip()]
    last = lines[-1][:300] if lines else "no error output"
    reason = write_failure(RuntimeError(last))
    if reason is not None:
        named = _NAMED.match(last)
        file = (
            named.group(3) if named and named.group(3) else str(tmp / WEIGHTS if "afetensor" in last else tmp)
        )
        return LieError(
            f"cannot write {file} ({reason}): verl.model_merger stopped (status {code}) merging {checkpoint} "
            f"into {target}; free space (or choose another --out) and rerun `lie merge`"
        )
    return LieError(f"verl.model_merger failed on {checkpoint} (status {code}): {last}")
