"""``lie tiny-model --out DIR``: a tiny Qwen3 model and byte-level BPE tokenizer built locally.

The corpus (``--corpus FILE``, text or JSON lines/parquet prompts) trains the tokenizer so that
the smoke data tokenises compactly. Example: ``lie tiny-model --out results/smoke/base/tiny``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from lie.errors import LieError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, help="output folder (Hugging Face format)")
    parser.add_argument(
        "--corpus", action="append", default=[], help="text file(s) to train the tokenizer on"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--vocab-size", type=int, default=512)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2)


def run(args: argparse.Namespace) -> int:
    import shutil
    import tempfile

    from lie.jsonl import share_tree
    from lie.tiny import build_tiny

    corpus = []
    for path in args.corpus:
        try:
            corpus.extend(Path(path).read_text(encoding="utf-8").splitlines())
        except OSError as exc:
            raise LieError(f"cannot read corpus {path}: {exc.strerror}") from None
    out = Path(args.out)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent if out.parent.exists() else None))
    try:
        build_tiny(
            tmp, corpus, seed=args.seed, vocab_size=args.vocab_size, hidden=args.hidden, layers=args.layers
        )
        share_tree(tmp)  # mkdtemp's 0700 and safetensors' 0600 would keep the group out
        if out.exists():
            shutil.rmtree(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(tmp), str(out))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0
