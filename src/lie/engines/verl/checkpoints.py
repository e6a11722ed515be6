"""verl's checkpoints of a run: which one is complete, and the repairs a kill can make necessary.

verl (trainer/ppo/v1/trainer_base.py, ``_save_checkpoint``) writes ``global_step_N/actor/``, then
``global_step_N/data.pt`` (the data loader's position), and last ``latest_checkpointed_iteration.txt``
with a plain ``open(..., "w")``; on ``resume_mode=auto`` it reads that tracker and resumes from the
folder it names, or silently starts from scratch when the folder is missing. A kill can leave:

- a torn ``global_step_N`` newer than the tracker (killed while saving): set aside, so that no
  later reader mistakes it for a checkpoint;
- an empty or unreadable tracker (killed while writing it): verl would crash on every rerun;
- a tracker naming a folder that is gone or has no ``data.pt``: verl would restart from step 0.

:func:`repair` runs before every launch and leaves the tracker naming the newest complete
checkpoint (or no tracker when there is none). verl applies ``max_actor_ckpt_to_keep`` only to the
checkpoints of its current launch; :func:`repair` applies the same retention across launches.

verl's FSDP checkpoint manager (utils/checkpoint/fsdp_checkpoint_manager.py, ``load_checkpoint``)
loads ``actor/model_world_size_{W}_rank_{r}.pt`` of the launch's own world size W, so a checkpoint
saved at another world size cannot be resumed: :func:`saved_world_size` reads W from the file names.
"""

from __future__ import annotations

import logging
import re
import shutil
from pathlib import Path

from lie.formats.jsonl import atomic_output
from lie.formats.outputs import read_seal, seal, seal_problem
from lie.formats.runs import RunDir

log = logging.getLogger(__name__)

TRACKER = "latest_checkpointed_iteration.txt"
_STEP = re.compile(r"global_step_(\d+)$")
_SHARD = re.compile(r"model_world_size_(\d+)_rank_0\.pt$")


def steps(folder: Path) -> dict[int, Path]:
    """``global_step_N`` folders by N."""
    out = {}
    if folder.is_dir():
        for path in folder.iterdir():
            match = _STEP.match(path.name)
            if match and path.is_dir():
                out[int(match.group(1))] = path
    return out


def is_complete(path: Path) -> bool:
    """verl wrote the actor state and then the data loader's position, and no state file is torn."""
    return checkpoint_problem(path) is None


def _torn(path: Path) -> bool:
    """An empty state file, or a zip archive (``torch.save``'s format) without its closing directory."""
    import zipfile

    if path.stat().st_size == 0:
        return True
    with open(path, "rb") as handle:
        if handle.read(2) != b"PK":
            return False
    try:
        zipfile.ZipFile(path).close()
    except (zipfile.BadZipFile, OSError):
        return True
    return False


def checkpoint_problem(path: Path) -> str | None:
    """Why ``global_step_N`` cannot be resumed or merged, else None."""
    if not (path / "data.pt").is_file():
        return "no data.pt"
    if not (path / "actor").is_dir() or not any((path / "actor").iterdir()):
        return "no actor state"
    torn = [p.name for p in sorted(path.rglob("*.pt")) if p.is_file() and _torn(p)]
    return f"{', '.join(torn)} torn (empty or truncated)" if torn else None


def seal_completed(marker: Path, step: int | None, record: dict) -> None:
    """Training finished at ``step``: ``marker`` records ``record`` and the sizes of that checkpoint's files."""
    final = marker.parent / f"global_step_{step}"
    files = [p for p in final.rglob("*") if p.is_file()] if step is not None else []
    seal(marker, files, {**record, "step": step})


def completed(marker: Path, digest: str) -> bool:
    """``marker`` says training finished with settings ``digest`` and its final checkpoint is as sealed."""
    record = read_seal(marker)
    if record is None or record.get("settings") != digest:
        return False
    problem = seal_problem(marker)
    if problem:
        log.warning(
            "%s: the finished run's checkpoint changed since (%s); repairing it", marker.parent, problem
        )
    return problem is None


def saved_world_size(path: Path) -> int | None:
    """The number of FSDP ranks a ``global_step_N`` checkpoint was saved by (None: no shard found)."""
    actor = path / "actor"
    found = [
        int(m.group(1)) for p in actor.glob("model_world_size_*_rank_0.pt") if (m := _SHARD.match(p.name))
    ]
    return found[0] if len(found) == 1 else None


def tracked_step(folder: Path) -> int | None:
    """The step the tracker names, or None when it is absent or unreadable."""
    try:
        return int((folder / TRACKER).read_text(encoding="utf-8").strip())
    except (OSError, ValueError):
        return None


def repair(
    rundir: RunDir,
    keep: int | None = None,
    protect: frozenset[int] = frozenset(),
    logged: set[int] | None = None,
) -> int | None:
    """Make verl's resume see the newest complete checkpoint; return its step (None: start afresh).

    Torn checkpoints are set aside; folders verl itself pruned (``data.pt`` left, ``actor/``
    removed) are deleted; with ``keep``, only the newest ``keep`` complete checkpoints stay (verl
    prunes within one launch only), and the steps in ``protect`` (a fixed ``eval_step``) are kept.
    With ``logged`` (the steps in the run's metrics files), a checkpoint of a step whose metrics were
    never logged is set aside too: verl saves before it logs the step, so a kill in between would
    otherwise resume after a step that has no metrics.
    """
    folder = rundir.checkpoints
    tracked = tracked_step(folder)
    complete = []
    for step, path in sorted(steps(folder).items()):
        if tracked is not None and step > tracked:  # verl writes the tracker last
            rundir.set_aside(path, "saved after the last tracked checkpoint")
        elif logged is not None and step not in logged and is_complete(path):
            rundir.set_aside(path, f"step {step}'s metrics were never logged (killed while saving)")
        elif is_complete(path):
            complete.append(step)
        elif (path / "data.pt").is_file() and not (path / "actor").exists():
            shutil.rmtree(path)  # verl's own retention removed its actor state
        else:
            rundir.set_aside(path, checkpoint_problem(path) or "incomplete")
    if keep:
        for step in complete[:-keep]:
            if step not in protect:
                shutil.rmtree(steps(folder)[step])
                log.info("%s: removed global_step_%d (training.keep_checkpoints=%d)", rundir.run, step, keep)
        complete = [s for s in complete if s in complete[-keep:] or s in protect]
    latest = max(complete, default=None)
    if latest != tracked:
        if latest is None:
            (folder / TRACKER).unlink(missing_ok=True)
            log.warning("%s: no complete verl checkpoint; training starts from the initial model", rundir.run)
        else:
            with atomic_output(folder / TRACKER) as out:
                out.write(str(latest))
            log.warning(
                "%s: the checkpoint tracker now names global_step_%d (was %s)", rundir.run, latest, tracked
            )
    return latest
