"""Merging (``lie merge RUN``): the run's evaluated checkpoint (``final.json``) as a Hugging Face folder.

verl checkpoints (FSDP shards) go through ``python -m verl.model_merger merge``; TRL checkpoints
are already in Hugging Face format and are copied. The output folder appears only when complete,
with the modes the user's umask gives (safetensors writes 0600).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from lie.config.layout import Layout
from lie.core.errors import LieError
from lie.formats.jsonl import share_tree


def merge(config: dict[str, Any], run: str, out: str | Path | None = None) -> Path:
    layout = Layout(config)
    rundir = layout.run_dir(run)
    if not rundir.final_json.exists():
        raise LieError(f"{rundir.final_json} is missing: train {run} to the end first (`lie train {run}`)")
    final = json.loads(rundir.final_json.read_text(encoding="utf-8"))
    checkpoint = Path(final["checkpoint"])
    target = Path(out) if out else layout.merged_model(run)
    target.parent.mkdir(parents=True, exist_ok=True)
    if final["engine"] == "trl":
        from lie.engines.trl.train import export_model

        export_model(checkpoint, target)
        share_tree(target)
        return target
    tmp = target.with_name(f".{target.name}.partial")
    shutil.rmtree(tmp, ignore_errors=True)
    cmd = [sys.executable, "-m", "verl.model_merger", "merge", "--backend", "fsdp",
           "--local_dir", str(checkpoint / "actor"), "--target_dir", str(tmp)]  # fmt: skip
    if config.get("trust_remote_code"):
        cmd.append("--trust-remote-code")
    code = subprocess.run(cmd).returncode
    if code != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise LieError(f"verl.model_merger failed on {checkpoint} (status {code})")
    share_tree(tmp)
    if target.exists():
        shutil.rmtree(target)
    os.replace(tmp, target)
    return target
