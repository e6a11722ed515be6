"""A tiny model's supervised stage, ``models.<m>.sft`` (``lie.stages.sft`` runs it), typed and checked.

Here, in the config, so that every reader (the stage; the study's gates, which read its ``stop_prob``)
takes the same checked object from ``Config.model(name).sft``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lie.core.errors import LieError

TASK_NAMES = ("arithmetic", "chain", "pointer")  # lie.tasks.TASKS (the config may not import tasks/)
SFT_KEYS = (
    "task",  # a synthetic task of lie.tasks (TASK_NAMES: its TASKS, a test checks)
    "seed",  # draws the problems, the truncations and the batches
    "problems",  # distinct problems drawn (the task's generate)
    "min_depth",  # their depths, uniform in [min_depth, max_depth]
    "max_depth",
    "stop_prob",  # per-step probability of stopping and guessing (0: always full solutions)
    "pad_prob",  # share of the examples with a step written that repeat their last step
    "pad_repeats",  # extra copies of that step
    "steps",  # optimizer steps in all
    "full_steps",  # the first of them on full solutions (the task), the rest on shallow examples
    "batch_size",  # examples per step
    "lr",  # peak learning rate
    "warmup_steps",  # linear warm-up steps
    "replay",  # optional (default 0): share of each shallow-phase batch that is decision-masked full solutions
)
OPTIONAL = {"replay": 0.0}  # keys a config may leave out, with their values then


@dataclass(frozen=True)
class SFTSettings:
    task: str
    seed: int
    problems: int
    min_depth: int
    max_depth: int
    stop_prob: float
    pad_prob: float
    pad_repeats: int
    steps: int
    full_steps: int
    batch_size: int
    lr: float
    warmup_steps: int
    replay: float = 0.0

    @classmethod
    def from_mapping(cls, mapping: Any, where: str) -> SFTSettings:
        """Check ``mapping`` (``models.<name>.sft``): every key present, of the right type and range."""
        if not isinstance(mapping, Mapping):
            raise LieError(f"{where} must be a mapping with keys {', '.join(SFT_KEYS)}")
        unknown = sorted(set(mapping) - set(SFT_KEYS))
        missing = [k for k in SFT_KEYS if k not in mapping and k not in OPTIONAL]
        mapping = {**OPTIONAL, **mapping}
        if unknown or missing:
            raise LieError(
                f"{where}: unknown key(s) {unknown}, missing key(s) {missing}; valid: {', '.join(SFT_KEYS)}"
            )
        if mapping["task"] not in TASK_NAMES:
            raise LieError(f"{where}.task must be one of {', '.join(TASK_NAMES)}, got {mapping['task']!r}")
        values: dict[str, Any] = {"task": mapping["task"]}
        for key in SFT_KEYS[1:]:
            value = mapping[key]
            real = key in ("stop_prob", "pad_prob", "lr", "replay")
            ok = isinstance(value, (int, float) if real else int) and not isinstance(value, bool)
            if not ok:
                raise LieError(f"{where}.{key} must be {'a number' if real else 'an integer'}, got {value!r}")
            values[key] = float(value) if real else value
        for key in ("problems", "min_depth", "steps", "batch_size"):
            if values[key] < 1:
                raise LieError(f"{where}.{key} must be >= 1, got {values[key]}")
        if values["max_depth"] < values["min_depth"]:
            raise LieError(f"{where}.max_depth must be >= min_depth, got {values['max_depth']}")
        for key in ("stop_prob", "pad_prob"):
            if not 0.0 <= values[key] <= 1.0:
                raise LieError(f"{where}.{key} must be in [0, 1], got {values[key]}")
        if not 0.0 <= values["replay"] < 1.0:
            raise LieError(f"{where}.replay must be in [0, 1), got {values['replay']}")
        if values["pad_repeats"] < 0:
            raise LieError(f"{where}.pad_repeats must be >= 0, got {values['pad_repeats']}")
        if values["lr"] <= 0:
            raise LieError(f"{where}.lr must be > 0, got {values['lr']}")
        if not 0 <= values["full_steps"] < values["steps"]:
            raise LieError(f"{where}.full_steps must be in 0..steps-1, got {values['full_steps']}")
        if values["warmup_steps"] < 0:
            raise LieError(f"{where}.warmup_steps must be >= 0, got {values['warmup_steps']}")
        return cls(**values)
