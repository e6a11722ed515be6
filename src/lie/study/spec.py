"""The ``study:`` section of a config: arms (a label and one run per seed), base model, benchmark.

The schema checks the shape; here the names are checked against the rest of the config, so that
a typo stops with the key that holds it rather than with a missing file later.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lie.errors import LieError


@dataclass(frozen=True)
class Arm:
    name: str
    label: str
    runs: tuple[str, ...]


@dataclass(frozen=True)
class StudySpec:
    arms: tuple[Arm, ...]
    base_model: str
    bench: str

    @property
    def runs(self) -> list[str]:
        return [run for arm in self.arms for run in arm.runs]


def study_spec(config: dict[str, Any]) -> StudySpec:
    """The checked ``study:`` section of ``config``."""
    section = config.get("study")
    if not isinstance(section, dict):
        raise LieError(
            "config has no study: section (arms, base_model, bench); "
            "run the study with --configfile workflow/configs/study.yaml"
        )
    for key in ("arms", "base_model", "bench"):
        if key not in section:
            raise LieError(f"study.{key} is missing")
    arms_section = section["arms"]
    if not isinstance(arms_section, dict) or not arms_section:
        raise LieError("study.arms must map arm names to {label, runs}")
    experiments = config.get("experiments") or {}
    seen: dict[str, str] = {}
    arms = []
    for name, arm in arms_section.items():
        where = f"study.arms.{name}"
        if not isinstance(arm, dict) or not isinstance(arm.get("runs"), list) or not arm["runs"]:
            raise LieError(f"{where} must have a label and a non-empty list of runs")
        for run in arm["runs"]:
            if run not in experiments:
                raise LieError(f"{where}.runs names {run!r}, which is not in experiments")
            if run in seen:
                raise LieError(f"{where}.runs names {run!r}, already in study.arms.{seen[run]}")
            seen[run] = name
        arms.append(Arm(name, str(arm.get("label") or name), tuple(arm["runs"])))
    evaluation = config.get("evaluation") or {}
    base, bench = section["base_model"], section["bench"]
    if base not in (evaluation.get("base_models") or []):
        raise LieError(f"study.base_model {base!r} is not in evaluation.base_models")
    if bench not in (evaluation.get("benchmarks") or []):
        raise LieError(f"study.bench {bench!r} is not in evaluation.benchmarks")
    return StudySpec(tuple(arms), base, bench)
