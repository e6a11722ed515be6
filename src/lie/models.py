"""Base models: fetched from the hub at a pinned revision, or built locally (tiny models).

Every stage then reads the model from a local folder (``lie.layout.Layout.base_model``), so that
one download serves data, reference lengths, training and evaluation, and the revision is
recorded beside the weights (``lie_source.json``).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path
from typing import Any

from lie.errors import LieError

log = logging.getLogger(__name__)
TINY_KEYS = ("seed", "vocab_size", "hidden", "layers", "corpus")
MODEL_FILES = ["*.json", "*.safetensors", "*.txt", "*.model", "*.jinja", "*.tiktoken", "*.py"]


def _replace_dir(tmp: Path, out: Path) -> None:
    if out.exists():
        shutil.rmtree(out)
    os.replace(tmp, out)


def fetch_model(name: str, entry: dict[str, Any], out: Path) -> Path:
    """``entry['hf_id']`` at ``entry['revision']`` into the hub cache, linked file by file from ``out``.

    The weights stay in the hub cache (``HF_HOME``, shared on a cluster); ``out`` holds links to
    them and ``lie_source.json`` with the commit. Offline (``HF_HUB_OFFLINE=1``) the cache alone
    serves it.
    """
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import (
        GatedRepoError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    from lie.data.sources import hub_offline

    hf_id, revision = entry.get("hf_id"), entry.get("revision")
    if not hf_id or not revision:
        raise LieError(f"models.{name}: set hf_id and revision (a commit SHA, tag or branch), or path")
    where = f"models.{name}: {hf_id}@{revision}"
    try:
        folder = Path(
            snapshot_download(
                repo_id=hf_id,
                revision=revision,
                allow_patterns=MODEL_FILES,
                local_files_only=hub_offline(),
            )
        )
    except (RepositoryNotFoundError, GatedRepoError) as exc:
        raise LieError(
            f"{where} not found or not accessible ({type(exc).__name__}); check the id, or set HF_TOKEN"
        ) from None
    except RevisionNotFoundError:
        raise LieError(f"{where}: that revision does not exist") from None
    except LocalEntryNotFoundError:
        raise LieError(
            f"{where} is not in the local hub cache and the hub is unreachable (HF_HUB_OFFLINE=1?); "
            f"download it once on a connected machine, or set models.{name}.path"
        ) from None
    tmp = out.with_name(f".{out.name}.partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for path in folder.rglob("*"):
        if path.is_file():
            link = tmp / path.relative_to(folder)
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(path.resolve())
    source = {"hf_id": hf_id, "revision": revision, "commit": folder.name}
    (tmp / "lie_source.json").write_text(json.dumps(source, indent=2))
    _replace_dir(tmp, out)
    log.info("%s: commit %s, linked from %s", where, folder.name, out)
    return out


def corpus_texts(files: list[Path]) -> list[str]:
    """Prompt texts and answers of data files (parquet in verl's format), to train a tiny tokenizer."""
    import pyarrow.parquet as pq

    texts = []
    for path in files:
        for row in pq.read_table(path, columns=["prompt", "reward_model"]).to_pylist():
            texts.extend(m["content"] for m in row["prompt"])
            texts.append(f"The answer is \\boxed{{{row['reward_model']['ground_truth']}}}.")
    return texts


def build_tiny_model(name: str, entry: dict[str, Any], out: Path, corpus_files: list[Path]) -> Path:
    from lie.tiny import build_tiny

    tiny = entry["tiny"]
    unknown = sorted(set(tiny) - set(TINY_KEYS))
    if unknown:
        raise LieError(
            f"models.{name}.tiny: unknown key(s) {', '.join(unknown)}; valid: {', '.join(TINY_KEYS)}"
        )
    tmp = out.with_name(f".{out.name}.partial")
    shutil.rmtree(tmp, ignore_errors=True)
    build_tiny(
        tmp,
        corpus_texts(corpus_files),
        seed=int(tiny.get("seed", 0)),
        vocab_size=int(tiny.get("vocab_size", 512)),
        hidden=int(tiny.get("hidden", 64)),
        layers=int(tiny.get("layers", 2)),
    )
    (tmp / "lie_source.json").write_text(json.dumps({"tiny": tiny}, indent=2))
    _replace_dir(tmp, out)
    return out
