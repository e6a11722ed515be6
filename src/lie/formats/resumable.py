"""Sharded, resumable work: each shard is written atomically and sealed, a rerun skips sealed shards.

A shard is finished only when its seal (``shard-N.seal.json``: size and digest of the shard,
its row count, written after the shard is on disk) verifies; a shard without one, or one that
is empty, short or changed since, is redone. So a kill (or a crash of the machine) leaves
nothing that looks finished, and the next run continues where the last one stopped. A manifest
records the settings; resuming with other settings stops with a message instead of mixing.

The units of work go in shards by an assignment (:func:`assign_shards`): a list of unit lists, each shard's
units in ascending order, computed from the inputs alone, so a resumed run redoes exactly the
shards it lacks. :func:`iter_assigned` reads the rows back in unit order, whatever the assignment.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from lie.core.errors import LieError
from lie.formats.jsonl import atomic_output, dumps, loads_line
from lie.formats.outputs import hold, read_object, read_seal, seal, seal_problem

log = logging.getLogger(__name__)
LOCK = "lie.lock"
MANIFEST = "manifest.json"
# what lie writes in a work folder: the manifest, the lock, shards and their seals, and the hidden
# temporaries a kill during one of those writes leaves (lie.formats.jsonl.atomic_output)
_OURS = r"(?:manifest\.json|shard-\d{5,}\.(?:jsonl|seal\.json))"
LIE_NAMES = re.compile(rf"(?:{_OURS}|lie\.lock|\.{_OURS}\.\w+\.partial)\Z", re.ASCII)


def shard_ranges(total: int, shard_size: int) -> list[range]:
    if shard_size < 1:
        raise LieError(f"shard size must be >= 1, got {shard_size}")
    return [range(start, min(start + shard_size, total)) for start in range(0, total, shard_size)]


def assign_shards(
    weights: Sequence[int], shard_size: int, max_factor: int = 4, min_units: int | None = None
) -> list[list[int]]:
    """Units ``0..len(weights)-1`` in shards of similar weight (expected tokens), heaviest first.

    The units are taken heaviest first (ties in unit order). A shard holds at least ``min_units``
    units (default ``shard_size``: an engine call runs as many samples at once as before, never a
    few long ones alone), and light units go on joining it until it holds ``shard_size`` x the mean
    weight, at most ``max_factor`` x ``shard_size`` units: samples of about one length run together
    (a call waits for its longest), short ones in bigger calls. Equal weights give the plain chunks
    of ``shard_size`` in unit order. Each shard lists its units in ascending order.
    """
    if shard_size < 1:
        raise LieError(f"shard size must be >= 1, got {shard_size}")
    if any(not isinstance(w, int) or w < 1 for w in weights):
        raise LieError("shard weights must be integers >= 1")
    total, mass = len(weights), sum(weights)
    # a shard's load L fits the budget when L * total <= shard_size * mass (integers: exact)
    budget, cap = shard_size * mass, max_factor * shard_size
    least = shard_size if min_units is None else max(1, min_units)
    shards: list[list[int]] = []
    current: list[int] = []
    load = 0
    for unit in sorted(range(total), key=lambda k: (-weights[k], k)):
        full = (load + weights[unit]) * total > budget and len(current) >= least
        if current and (full or len(current) >= cap):
            shards.append(sorted(current))
            current, load = [], 0
        current.append(unit)
        load += weights[unit]
    if current:
        shards.append(sorted(current))
    return shards


def assignment_digest(assignment: Sequence[Sequence[int]]) -> str:
    """A short digest of an assignment's shard contents (recorded in the manifest: another assignment is not resumed)."""
    text = ";".join(",".join(map(str, shard)) for shard in assignment)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _foreign(work_dir: Path) -> list[str]:
    """The names in ``work_dir`` lie does not write there (a folder or link of such a name too)."""
    return sorted(p.name for p in work_dir.iterdir()
                  if not (LIE_NAMES.match(p.name) and p.is_file() and not p.is_symlink()))  # fmt: skip


def _check_manifest(work_dir: Path, settings: dict[str, Any]) -> None:
    foreign = _foreign(work_dir)
    if foreign:
        shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
        raise LieError(
            f"{work_dir} holds files lie did not write ({shown}): move them out first; lie works in that "
            "folder and removes it once the output is written"
        )
    manifest = work_dir / MANIFEST
    if not manifest.exists() and any(p.name != LOCK for p in work_dir.iterdir()):
        raise LieError(
            f"{work_dir} is a folder lie did not make (no manifest.json): move it, lie works there"
        )
    if manifest.exists():
        previous, why = read_object(manifest)
        if previous is None:
            raise LieError(
                f"{manifest}: not a manifest lie wrote ({why}); delete the folder {work_dir} to start over "
                "(its shards are redone)"
            )
        if previous != settings:
            changed = sorted(k for k in set(previous) | set(settings) if previous.get(k) != settings.get(k))
            raise LieError(
                f"{work_dir} holds shards made with other settings ({', '.join(changed)} differ); "
                "rerun with the same settings to resume, or delete that folder to start again"
            )
        return
    with atomic_output(manifest) as out:
        out.write(dumps(settings, indent=2, sort_keys=True))


def remove_work(work_dir: str | Path) -> None:
    """Once the output is written: the files lie wrote in ``work_dir`` go, and the folder with them; a
    file the user put there meanwhile stays, with its folder (a warning names it)."""
    work_dir = Path(work_dir)
    if not work_dir.is_dir() or work_dir.is_symlink():
        return
    foreign = _foreign(work_dir)
    for path in work_dir.iterdir():
        if path.name not in foreign:
            path.unlink(missing_ok=True)
    if foreign:
        log.warning("%s: kept, it holds files lie did not write (%s)", work_dir, ", ".join(foreign))
        return
    work_dir.rmdir()


def run_in_shards(
    total: int,
    shard_size: int,
    work_dir: str | Path,
    settings: dict[str, Any],
    work: Callable[[Sequence[int]], list[dict[str, Any]]],
    desc: str = "shards",
    progress: bool = True,
    unit: str = "it",
) -> list[Path]:
    """Run ``work`` on every shard of ``range(total)`` not yet done; return all shard files in order.

    ``total`` counts units of work (samples, for generation): a set of few problems with many
    samples each still gets a resume point every ``shard_size`` samples.
    """
    return run_assigned(shard_ranges(total, shard_size), work_dir, settings, work, desc, progress, unit)


def run_assigned(
    assignment: Sequence[Sequence[int]],
    work_dir: str | Path,
    settings: dict[str, Any],
    work: Callable[[Sequence[int]], list[dict[str, Any]]],
    desc: str = "shards",
    progress: bool = True,
    unit: str = "it",
) -> list[Path]:
    """Run ``work`` on every shard of ``assignment`` (lists of units) not yet done; return all shard files."""
    work_dir = Path(work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    with hold(work_dir / LOCK, desc, str(work_dir)):  # two commands writing one output: the second stops
        return _run(
            assignment, work_dir, settings, work, {"desc": desc, "unit": unit, "disable": not progress}
        )


def _run(
    assignment: Sequence[Sequence[int]],
    work_dir: Path,
    settings: dict[str, Any],
    work: Callable[[Sequence[int]], list[dict[str, Any]]],
    bar_options: dict[str, Any],
) -> list[Path]:
    from tqdm import tqdm

    _check_manifest(work_dir, settings)
    paths = [work_dir / f"shard-{k:05d}.jsonl" for k in range(len(assignment))]
    todo = [(r, p) for r, p in zip(assignment, paths) if not _finished(p, len(r))]
    if len(todo) < len(assignment):
        log.info(
            "%s: resuming, %d of %d shards already done",
            work_dir,
            len(assignment) - len(todo),
            len(assignment),
        )
    total = sum(len(r) for r in assignment)
    bar = tqdm(total=total, initial=total - sum(len(r) for r, _ in todo), **bar_options)
    for rng, path in todo:
        rows = work(rng)
        with atomic_output(path) as out:
            for row in rows:
                out.write(dumps(row) + "\n")
        seal(_seal_file(path), [path], {"rows": len(rows), "units": len(rng)})
        bar.update(len(rng))
    bar.close()
    return paths


def _seal_file(shard: Path) -> Path:
    return shard.with_name(shard.name.replace(".jsonl", ".seal.json"))


def _finished(shard: Path, units: int) -> bool:
    """The shard's seal verifies (same size and digest, the same number of units); else it is redone."""
    if not shard.exists() and not _seal_file(shard).exists():
        return False
    problem = seal_problem(_seal_file(shard))
    record = read_seal(_seal_file(shard)) or {}
    if problem is None and record.get("units") != units:
        problem = f"sealed for {record.get('units')} units, not {units}"
    if problem:
        log.warning("%s is not finished (%s): redoing it", shard, problem)
        return False
    return True


def iter_shards(paths: list[Path]) -> Iterator[dict[str, Any]]:
    """The rows of sealed shards; a bad line (a shard changed by hand) names its file and line."""
    for path in paths:
        with open(path, "rb") as handle:
            for lineno, line in enumerate(handle, start=1):
                if line.strip():
                    yield loads_line(line, f"{path} line {lineno}")


def iter_assigned(paths: list[Path], assignment: Sequence[Sequence[int]]) -> Iterator[dict[str, Any]]:
    """The rows of sealed shards, one per unit, in unit order (not shard order), read one at a time.

    A shard must hold one row per unit of its assignment, in the assignment's order; else the error names it.
    """
    where: list[tuple[int, int, int]] = []  # (unit, shard, byte offset)
    for number, (path, units) in enumerate(zip(paths, assignment, strict=True)):
        offsets, offset = [], 0
        with open(path, "rb") as handle:
            for line in handle:
                if line.strip():
                    offsets.append(offset)
                offset += len(line)
        if len(offsets) != len(units):
            raise LieError(
                f"{path}: {len(offsets)} rows for {len(units)} units; delete {path.parent} and rerun"
            )
        where += [(u, number, o) for u, o in zip(units, offsets)]
    where.sort()
    for _, number, offset in where:
        with open(paths[number], "rb") as handle:
            handle.seek(offset)
            line = handle.readline()
        yield loads_line(line, f"{paths[number]} byte {offset}")
