"""What the preflight's checks (``preflight.py``) and its training trials (``preflight_trial.py``) share:
a row of its table, and the distinct training shapes of the selected runs, each tried with its largest
model."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from lie.config.typed import Config
from lie.stages import plan as planmod


@dataclass(frozen=True)
class Check:
    name: str
    status: str  # "pass", "fail" or "skipped: <why>"
    detail: str = ""


@dataclass(frozen=True)
class Shape:
    """What a training trial must reproduce: the model family, the lengths, the GPUs of a node."""

    family: str
    prompt_len: int
    response_len: int
    gpus_per_node: int
    runs: tuple[str, ...] = field(default=(), compare=False)


def family_of(config: Config, model: str) -> str:
    """``Qwen/Qwen3-4B-Base`` -> ``Qwen/Qwen3-*-Base``: a model id with its size left out."""
    entry = config.model(model)
    name = entry.hf_id or entry.path or model
    return re.sub(r"\d+(?:\.\d+)?B", "*", name, count=1)


def shapes(config: Config, runs: list[str]) -> list[Shape]:
    """The distinct training shapes of ``runs``, in order of first appearance."""
    found: dict[tuple[str, int, int, int], list[str]] = {}
    for run in runs:
        s = config.run(run)
        key = (family_of(config, s.model), s.max_prompt_length, s.max_response_length, s.n_gpus_per_node)
        found.setdefault(key, []).append(run)
    return [Shape(*key, runs=tuple(members)) for key, members in found.items()]


def trial_model(config: Config, shape: Shape) -> str:
    """The largest model the shape's runs train (by the size in its id): the memory the shape must hold."""
    models = {config.run(run).model for run in shape.runs}
    return max(sorted(models), key=lambda m: planmod.params_billions(config, m))


def trial_models(config: Config, runs: list[str]) -> list[str]:
    """The models the GPU trials of ``runs`` train: one per shape."""
    return list(dict.fromkeys(trial_model(config, s) for s in shapes(config, runs)))
