"""Sharded, resumable work: each shard is written atomically, a rerun skips finished shards.

A run that is killed leaves only whole shard files (and perhaps a ``*.partial`` temporary file,
ignored and overwritten), so the next run continues where the last one stopped. A manifest
records the settings; resuming with other settings stops with a message instead of mixing.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from lie.core.errors import LieError
from lie.formats.jsonl import atomic_output, dumps

log = logging.getLogger(__name__)


def shard_ranges(total: int, shard_size: int) -> list[range]:
    if shard_size < 1:
        raise LieError(f"shard size must be >= 1, got {shard_size}")
    return [range(start, min(start + shard_size, total)) for start in range(0, total, shard_size)]


def _check_manifest(work_dir: Path, settings: dict[str, Any]) -> None:
    manifest = work_dir / "manifest.json"
    if manifest.exists():
        previous = json.loads(manifest.read_text(encoding="utf-8"))
        if previous != settings:
            changed = sorted(k for k in set(previous) | set(settings) if previous.get(k) != settings.get(k))
            raise LieError(
                f"{work_dir} holds shards made with other settings ({', '.join(changed)} differ); "
                "rerun with the same settings to resume, or delete that folder to start again"
            )
        return
    with atomic_output(manifest) as out:
        out.write(dumps(settings, indent=2, sort_keys=True))


def run_in_shards(
    total: int,
    shard_size: int,
    work_dir: str | Path,
    settings: dict[str, Any],
    work: Callable[[range], list[dict[str, Any]]],
    desc: str = "shards",
    progress: bool = True,
    unit: str = "it",
) -> list[Path]:
    """Run ``work`` on every shard of ``range(total)`` not yet done; return all shard files in order.

    ``total`` counts units of work (samples, for generation): a set of few problems with many
    samples each still gets a resume point every ``shard_size`` samples.
    """
    from tqdm import tqdm

    work_dir = Path(work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    _check_manifest(work_dir, settings)
    ranges = shard_ranges(total, shard_size)
    paths = [work_dir / f"shard-{k:05d}.jsonl" for k in range(len(ranges))]
    todo = [(r, p) for r, p in zip(ranges, paths) if not p.exists()]
    if len(todo) < len(ranges):
        log.info("%s: resuming, %d of %d shards already done", work_dir, len(ranges) - len(todo), len(ranges))
    bar = tqdm(
        total=total, initial=total - sum(len(r) for r, _ in todo), desc=desc, unit=unit, disable=not progress
    )
    for rng, path in todo:
        rows = work(rng)
        with atomic_output(path) as out:
            for row in rows:
                out.write(dumps(row) + "\n")
        bar.update(len(rng))
    bar.close()
    return paths


def iter_shards(paths: list[Path]) -> Iterator[dict[str, Any]]:
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                if line.strip():
                    yield json.loads(line)
