"""``lie base-model M --out DIR``: a base model of config.yaml in a local folder.

Models with ``hf_id``/``revision`` are downloaded at that revision (``HF_TOKEN`` from the
environment for gated ones; offline from the hub cache with ``HF_HUB_OFFLINE=1``); models with
``tiny:`` are built locally, their tokenizer trained on the ``--corpus`` data files; with ``sft:``
beside ``tiny:`` they are then taught by a short supervised stage (``lie.stages.sft``, the CPU study).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from lie.commands.argtypes import add_config_option
from lie.core.errors import LieError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_option(parser)
    parser.add_argument("name", help="a model name of config.yaml's models")
    parser.add_argument("--out", help="output folder (default: <outdir>/base/<name>)")
    parser.add_argument(
        "--corpus", action="append", default=[], help="tiny models: data file(s) for the tokenizer"
    )


def run(args: argparse.Namespace) -> int:
    from lie.config import load_config, model_entry
    from lie.config.layout import Layout
    from lie.stages.base_model import build_tiny_model, fetch_model

    config = load_config(args.config)
    entry = model_entry(config, args.name)
    out = Path(args.out) if args.out else Layout(config).root / "base" / args.name
    out.parent.mkdir(parents=True, exist_ok=True)
    if entry.get("sft") is not None and not entry.get("tiny"):
        raise LieError(
            f"models.{args.name}.sft: the supervised stage is for tiny models; add tiny: or drop sft:"
        )
    if entry.get("tiny"):
        template = (config.get("prompt") or {}).get("math")
        build_tiny_model(args.name, entry, out, [Path(p) for p in args.corpus], template)
    elif entry.get("path"):
        raise LieError(
            f"models.{args.name} points at a local folder ({entry['path']}); there is nothing to fetch"
        )
    else:
        fetch_model(args.name, entry, out)
    return 0
