"""What every training run keeps, in one layout both engines (verl, TRL) write and the report reads.

``<outdir>/runs/<run>/``:
- ``metrics/launch-<time>.jsonl``: per-step metrics, one ``{"step": N, "data": {...}}`` line each
  (verl's file-logger format); one file per launch because verl's logger truncates its file, and
  :func:`read_metrics` merges them, a later launch winning for a step it repeats;
- ``rollouts/step-<N>.<writer>.jsonl``: every training sample of step N with its reward breakdown
  (``ROLLOUT_FIELDS``);
- ``checkpoints/``: the engine's checkpoints (``global_step_N/`` for verl, ``checkpoint-N/`` for TRL);
- ``run.json``: the resolved settings and the command; ``final.json``: written last, names the
  checkpoint to evaluate (the final one or a fixed step from config, never the best on a test set);
- ``settings.sha256``: the digest of what the checkpoints were trained with (``lie.config.identity``); a
  launch with other settings moves the old checkpoints, rollouts and metrics into
  ``superseded/<time>/`` (never deleting them) and starts afresh;
- ``verl_config.yaml``: verl's whole composed configuration of the last launch (verl runs);
- ``lie.lock``: held (``flock``) by the one command that trains or merges the run; it names the holder.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lie.core.errors import LieError
from lie.core.reward import BREAKDOWN_KEYS
from lie.formats.jsonl import atomic_output, dumps, read_bounded
from lie.formats.outputs import OWNER, hold

log = logging.getLogger(__name__)

ROLLOUT_FIELDS = (
    "step", "group", "uid", "prompt_index", "response", "reward", *BREAKDOWN_KEYS, "grade_status",
)  # fmt: skip


def _recorded_digest(path: Path) -> str | None:
    """The digest a run folder records in ``path`` (``settings.sha256``, ``inputs.sha256``), None where
    there is none; read bounded (a FIFO or device there is one line, never waited on), and one that is
    not the ASCII digest lie writes (bytes not UTF-8, garbage) reads as "unreadable": it matches no
    digest, so the run's outputs are set aside, never trusted."""
    if not os.path.lexists(path):
        return None
    data = read_bounded(path, 4096, "the run's digest")
    try:
        text = data.decode("ascii").strip()
    except UnicodeDecodeError:
        return "unreadable"
    return text if text.isalnum() else "unreadable"


class RunDir:
    """Paths of one run's outputs."""

    def __init__(self, outdir: str | Path, run: str):
        self.run = run
        self.root = Path(outdir) / "runs" / run

    @property
    def metrics_dir(self) -> Path:
        return self.root / "metrics"

    @property
    def rollouts_dir(self) -> Path:
        return self.root / "rollouts"

    @property
    def checkpoints(self) -> Path:
        return self.root / "checkpoints"

    @property
    def run_json(self) -> Path:
        return self.root / "run.json"

    @property
    def final_json(self) -> Path:
        return self.root / "final.json"

    @property
    def settings_file(self) -> Path:
        return self.root / "settings.sha256"

    @property
    def inputs_file(self) -> Path:
        return self.root / "inputs.sha256"

    @property
    def verl_config(self) -> Path:
        return self.root / "verl_config.yaml"

    @property
    def superseded(self) -> Path:
        return self.root / "superseded"

    @property
    def lock_file(self) -> Path:
        return self.root / "lie.lock"

    def lock(self, what: str) -> contextlib.AbstractContextManager[None]:
        """Hold the run folder for one command (``what``); a second one stops with a line naming the holder."""
        self.root.mkdir(parents=True, exist_ok=True)
        return hold(self.lock_file, what, f"run {self.run}")

    def claim(self, digest: str) -> Path | None:
        """Keep this run's outputs only if they were made with settings ``digest``.

        Outputs of other (or unknown) settings move to ``superseded/<time>/``, which is returned;
        then the digest is recorded. Nothing is deleted.
        """
        old = _recorded_digest(self.settings_file)
        if old == digest:
            return None
        made = f"digest {old[:12]}" if old else "no settings digest"
        moved = self.supersede(f"its checkpoints were made with other settings ({made})")
        self.root.mkdir(parents=True, exist_ok=True)
        with atomic_output(self.settings_file) as out:
            out.write(digest + "\n")
        return moved

    def claim_inputs(self, digest: str) -> Path | None:
        """Keep this run's outputs only if they were trained on the inputs of ``digest``
        (:func:`inputs_digest`): other ones move to ``superseded/`` as :meth:`claim` does. A run of older
        code, with no record of its inputs, keeps its outputs and gets this one."""
        old = _recorded_digest(self.inputs_file)
        if old == digest:
            return None
        moved = None
        if old is not None:
            moved = self.supersede(f"its checkpoints were trained on other inputs (digest {old[:12]})")
        self.root.mkdir(parents=True, exist_ok=True)
        with atomic_output(self.inputs_file) as out:
            out.write(digest + "\n")
        return moved

    def supersede(self, why: str) -> Path | None:
        """Move the checkpoints, rollouts and metrics into ``superseded/<time>/`` (returned; None when
        there were none), so that the next launch starts afresh. Nothing is deleted."""
        outputs = [p for p in (self.checkpoints, self.rollouts_dir, self.metrics_dir) if p.exists()]
        if not outputs:
            return None
        moved = self.superseded / time.strftime("%Y%m%d-%H%M%S")
        moved.mkdir(parents=True, exist_ok=True)
        for path in outputs:
            shutil.move(str(path), str(moved / path.name))
        log.warning("%s: %s; moved them to %s and starting afresh", self.run, why, moved)
        return moved

    def set_aside(self, path: Path, why: str) -> Path:
        """Move a torn checkpoint out of the engine's sight into ``superseded/torn/`` (never delete)."""
        target = self.superseded / "torn" / f"{path.name}-{time.strftime('%Y%m%d-%H%M%S')}"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(path), str(target))
        log.warning("%s: %s is incomplete (%s); set aside as %s", self.run, path.name, why, target)
        return target

    def trim_rollouts_after(self, step: int) -> int:
        """Drop rollout files of steps after ``step``: a resumed run redoes those steps."""
        removed = 0
        for later, paths in rollout_files(self).items():
            if later > step:
                for path in paths:
                    path.unlink()
                    removed += 1
        if removed:
            log.info(
                "%s: removed %d rollout files of steps after %d (they are redone)", self.run, removed, step
            )
        return removed

    def new_metrics_file(self) -> Path:
        self.metrics_dir.mkdir(parents=True, exist_ok=True)
        return (
            self.metrics_dir / f"launch-{time.strftime('%Y%m%d-%H%M%S')}-{time.time_ns() % 10**6:06d}.jsonl"
        )


def _read_jsonl_tolerant(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) of a file another process may have been killed while writing: a torn
    last line is skipped."""
    with open(path, "rb") as handle:
        lines = handle.readlines()
    for i, raw in enumerate(lines):
        if not raw.strip():
            continue
        try:  # garbage bytes, JSON nested thousands deep, a 5,000-digit number: not valid JSON either
            record = json.loads(raw.decode("utf-8"))
        except (ValueError, RecursionError):  # UnicodeDecodeError and JSONDecodeError are ValueErrors
            if i == len(lines) - 1:
                return
            raise LieError(f"{path} line {i + 1}: not valid JSON") from None
        if not isinstance(record, dict):
            raise LieError(f"{path} line {i + 1}: expected a JSON object, got {type(record).__name__}")
        yield i + 1, record


def metrics_line(step: int, data: dict[str, Any]) -> str:
    """One line of a metrics file, ``{"step": N, "data": {...}}`` (verl's file logger's format), as
    strict JSON: a NaN or infinite metric is written as null."""
    clean = {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in data.items()}
    return dumps({"step": int(step), "data": clean}) + "\n"


def append_metrics(path: Path, step: int, data: dict[str, Any]) -> None:
    """Append one step's metrics to ``path`` (a ``metrics/launch-*.jsonl`` of :meth:`RunDir.new_metrics_file`)."""
    with open(path, "a", encoding="utf-8") as out:
        out.write(metrics_line(step, data))


def validation_average(metrics: dict[str, Any]) -> float | None:
    """The mean of a step's validation accuracies (``val-core/<set>/acc/mean@<n>``), or None."""
    values = [
        float(v)
        for k, v in metrics.items()
        if k.startswith("val-core/") and "/acc/mean@" in k and isinstance(v, (int, float))
    ]
    return sum(values) / len(values) if values else None


def read_metrics(run_dir: RunDir | Path) -> list[dict[str, Any]]:
    """Per-step metrics of a run, ``[{"step": N, **metrics}]`` sorted by step; later launches win.
    A line without an integer ``step`` or a ``data`` mapping is one LieError naming file, line, key."""
    folder = run_dir.metrics_dir if isinstance(run_dir, RunDir) else Path(run_dir) / "metrics"
    by_step: dict[int, dict[str, Any]] = {}
    for path in sorted(folder.glob("launch-*.jsonl")):
        for lineno, record in _read_jsonl_tolerant(path):
            step, data = record.get("step"), record.get("data", {})
            if isinstance(step, bool) or not isinstance(step, int):
                raise LieError(f"{path} line {lineno}: field 'step' must be an integer, got {step!r:.40}")
            if not isinstance(data, dict):
                raise LieError(f"{path} line {lineno}: field 'data' must be a mapping of metric names")
            by_step.setdefault(step, {}).update(data)
    return [{"step": step, **by_step[step]} for step in sorted(by_step)]


_STEP_FILE = re.compile(r"step-(\d+)\.")


def rollout_files(run_dir: RunDir | Path) -> dict[int, list[Path]]:
    folder = run_dir.rollouts_dir if isinstance(run_dir, RunDir) else Path(run_dir) / "rollouts"
    return _step_files(folder)


def _step_files(folder: Path) -> dict[int, list[Path]]:
    """A rollouts folder's files by step (several writers may log one step)."""
    out: dict[int, list[Path]] = {}
    for path in sorted(folder.glob("step-*.jsonl")):
        match = _STEP_FILE.match(path.name)
        if match:
            out.setdefault(int(match.group(1)), []).append(path)
    return out


def read_rollouts(run_dir: RunDir | Path, step: int | None = None) -> list[dict[str, Any]]:
    """Training samples with their reward breakdown, of one step or all steps."""
    files = rollout_files(run_dir)
    steps = [step] if step is not None else sorted(files)
    return [record for s in steps for path in files.get(s, []) for _, record in _read_jsonl_tolerant(path)]


def natural_key(text: str) -> tuple[Any, ...]:
    """``text`` with its digit runs as numbers: ``a_2_0`` before ``a_10_0``."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text))


def sort_rollouts(folder: Path, step: int) -> None:
    """Rewrite a step's rollout files in the order of their groups and sample ids, not of arrival
    (verl's reward workers log a sample when it is scored). Atomic per file; nothing if none."""
    for path in _step_files(folder).get(step, []):
        records = [record for _, record in _read_jsonl_tolerant(path)]
        ordered = sorted(records, key=lambda r: (natural_key(str(r["group"])), natural_key(str(r["uid"]))))
        if ordered != records:
            with atomic_output(path) as out:
                for record in ordered:
                    out.write(dumps(record) + "\n")


def rollout_record(
    step: int,
    group: str,
    uid: str,
    prompt_index: Any,
    response: str,
    result: Any,
    num_tokens: int,
    ref_len: int | None,
    grade_status: str,
) -> dict[str, Any]:
    """One training sample in the shared schema (``ROLLOUT_FIELDS``); ``result`` a RewardBreakdown."""
    return {
        "step": step,
        "group": group,
        "uid": uid,
        "prompt_index": prompt_index,
        "response": response,
        "reward": result.reward,
        **result.extra_info(num_tokens, ref_len),
        "grade_status": grade_status,
    }


def append_rollouts(folder: Path, step: int, writer: str, records: list[dict[str, Any]]) -> None:
    """Append a step's samples to ``step-<N>.<writer>.jsonl`` (one writer per process: no interleaving)."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f"step-{step:06d}.{writer}.jsonl", "a", encoding="utf-8") as out:
        for record in records:
            out.write(dumps(record) + "\n")


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Atomically, as strict JSON (NaN or infinity is an error naming the field, not a bare NaN)."""
    with atomic_output(path) as out:
        out.write(dumps(data, indent=2, sort_keys=True, default=str) + "\n")


def write_final(rundir: RunDir, engine: str, checkpoint: Path, step: int) -> None:
    """``final.json``: the checkpoint a finished run is evaluated at (read back by :func:`read_final`).
    Left as it is when it already says so: a rerun with nothing to train must not make the merge after it
    look outdated to Snakemake (which compares modification times)."""
    final = {"engine": engine, "checkpoint": str(checkpoint), "step": int(step)}
    with contextlib.suppress(OSError, UnicodeDecodeError, ValueError, RecursionError):
        if json.loads(rundir.final_json.read_text(encoding="utf-8")) == final:
            return
    write_json(rundir.final_json, final)


def read_final(rundir: RunDir) -> tuple[str, Path]:
    """``final.json``'s engine and checkpoint, checked: a checkpoint of this run's folder, nowhere else."""
    fix = f"rerun `lie train {rundir.run}` to rewrite it"
    path = rundir.final_json
    if not path.exists():
        raise LieError(f"{path} is missing: train {rundir.run} to the end first (`lie train {rundir.run}`)")
    try:
        final = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise LieError(f"{path} is not valid JSON ({type(exc).__name__}: {str(exc)[:200]}); {fix}") from None
    if not isinstance(final, dict) or not all(
        isinstance(final.get(k), str) for k in ("engine", "checkpoint")
    ):
        raise LieError(f"{path}: expected an object with 'engine' and 'checkpoint' strings; {fix}")
    if final["engine"] not in ("trl", "verl"):
        raise LieError(f"{path}: engine {final['engine']!r} is not trl or verl; {fix}")
    checkpoint = Path(final["checkpoint"])
    top = rundir.checkpoints.resolve()
    if top not in checkpoint.resolve().parents:
        raise LieError(
            f"{path}: checkpoint {checkpoint} is not a checkpoint under {rundir.checkpoints}; {fix}"
        )
    if not checkpoint.is_dir():
        raise LieError(f"{path}: checkpoint {checkpoint} is missing; {fix}")
    return final["engine"], checkpoint


def inputs_digest(train_file: str | Path, model: str | Path) -> str:
    """What a run trains on, by content: the training file's bytes and every file of the initial model
    folder (its relative name and bytes) but lie's record of how it was made. Part of a run's identity
    (:meth:`RunDir.claim_inputs`): ``lie train RUN --train-file OTHER`` must not resume checkpoints
    trained on another file. Reads every byte once a launch (an 8B model: ~16 GB)."""
    import hashlib

    digest = hashlib.sha256()

    def add(path: Path, name: str) -> None:
        digest.update(f"{name}\0{path.stat().st_size}\0".encode())
        with open(path, "rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)

    add(Path(train_file), "train")
    root = Path(model)
    for path in sorted(p for p in root.rglob("*") if p.is_file() and p.name != OWNER):
        add(path, f"model/{path.relative_to(root).as_posix()}")
    return digest.hexdigest()
