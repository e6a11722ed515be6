"""``lie merge RUN --out DIR``: the run's evaluated checkpoint (``final.json``) in Hugging Face format.

verl checkpoints (FSDP shards) go through ``python -m verl.model_merger merge``; TRL checkpoints
are already in Hugging Face format and are copied. The output folder appears only when complete.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from lie.core.errors import LieError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run")
    parser.add_argument("--config", default="config.yaml")
    parser.add_argument("--out", help="output folder (default: <outdir>/models/<run>)")


def run(args: argparse.Namespace) -> int:
    from lie.config import load_config
    from lie.config.layout import Layout
    from lie.formats.jsonl import share_tree

    config = load_config(args.config)
    layout = Layout(config)
    rundir = layout.run_dir(args.run)
    if not rundir.final_json.exists():
        raise LieError(
            f"{rundir.final_json} is missing: train {args.run} to the end first (`lie train {args.run}`)"
        )
    final = json.loads(rundir.final_json.read_text(encoding="utf-8"))
    checkpoint = Path(final["checkpoint"])
    target = Path(args.out) if args.out else layout.merged_model(args.run)
    target.parent.mkdir(parents=True, exist_ok=True)
    if final["engine"] == "trl":
        from lie.engines.trl.train import export_model

        export_model(checkpoint, target)
        share_tree(target)  # checkpoints keep safetensors' 0600: the group reads the merged model
        return 0
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
    return 0
