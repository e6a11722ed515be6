"""The ``study:`` section of a config: conditions, arms, the probe, the gates and the verdict rule.

The schema checks the shape; here the names are checked against the rest of the config, so that
a typo stops with the key that holds it rather than with a missing file later. The thresholds are
the pre-registered ones (docs/study/preregistration.md): the code reads them from here, never
from a results file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lie.config.typed import Config
from lie.core.errors import LieError

PREDICTIONS = ("positive", "zero")


@dataclass(frozen=True)
class Arm:
    name: str
    label: str
    runs: tuple[str, ...]


@dataclass(frozen=True)
class Condition:
    name: str
    label: str
    base_models: tuple[str, ...]  # the supervised models its runs start from (one per supervised seed)
    depths: tuple[int, int]  # depth needed of the test problems that count for this condition
    trap_index: tuple[float, float]  # the gate: allowed range of the supervised model's trap index
    prediction: str  # primary arm minus baseline: "positive" or "zero"
    arms: tuple[Arm, ...]

    @property
    def base_model(self) -> str:
        """The first supervised model (the only one in the first study)."""
        return self.base_models[0]

    def arm(self, name: str) -> Arm | None:
        return next((a for a in self.arms if a.name == name), None)

    @property
    def runs(self) -> list[str]:
        return [run for arm in self.arms for run in arm.runs]


@dataclass(frozen=True)
class Gates:
    step_accuracy: float  # min share of written steps that are right (probe, each supervised model)
    full_depth_accuracy: float  # min accuracy of probe samples that wrote the full depth
    full_depth_samples: int  # min number of those samples (else the gate cannot pass)


@dataclass(frozen=True)
class RegisteredTests:
    """The second registration's tests (docs/study/preregistration-v2.md): every number is registered."""

    alpha: float  # one-sided level of the primary test, the interaction and the slope
    power: float  # the power at which the smallest detectable effect is stated
    strong: str  # the condition of the primary test
    weak: str  # the interaction: effect in ``strong`` minus effect in ``weak``
    strength: dict[str, float]  # condition -> trap strength (the slope's x), fixed before any run
    persistence_steps: int  # GRPO's trap index in ``strong`` stays >= the threshold through this step
    persistence_threshold: float


@dataclass(frozen=True)
class ThirdRegistration:
    """The third registration's gates, check and test (docs/study/preregistration-v3.md): every number
    is registered there."""

    forced_n: int  # forced-depth probe: samples per test problem
    forced_seed: int
    # the gates read one-sided 95% bounds (lie.study.decision.read_gates)
    step_accuracy: float  # G1: Wilson lower bound of right / written steps (forced probe) >= this
    full_depth_accuracy: float  # G2: Wilson lower bound of the forced probe's accuracy >= this
    max_right_per_run: (
        float  # G3: Clopper-Pearson upper bound of the natural probe's accuracy x run_samples <= this
    )
    run_samples: int  # training samples of one RL run (steps x prompts x samples)
    binding_median: float  # binding check: median right training samples per GRPO run <= this
    alpha: float  # the primary test: one-sided paired t
    smallest_effect: float  # the smallest effect of interest (accuracy)
    power: float  # the detectable effect is stated at this power


@dataclass(frozen=True)
class StudySpec:
    conditions: tuple[Condition, ...]
    bench: str
    baseline: str  # the arm every paired difference subtracts
    primary: str  # the pre-registered comparison: primary - baseline
    length_only: str  # the arm whose looping the secondary prediction compares with the primary's
    probe_n: int
    probe_seed: int
    gates: Gates
    min_positive_seeds: int  # "positive": primary - baseline > 0 in at least this many seeds, mean > 0
    zero_margin: float  # "zero": |mean primary - baseline| <= this
    tests: RegisteredTests | None = (
        None  # the second registration's tests (absent in the first study's config)
    )
    third: ThirdRegistration | None = None  # the third registration (study.third)

    @property
    def registration(self) -> int:
        """Which registration the config runs: 1, 2 (``study.tests``) or 3 (``study.third``)."""
        return 3 if self.third else 2 if self.tests else 1

    @property
    def runs(self) -> list[str]:
        return [run for c in self.conditions for run in c.runs]

    @property
    def base_models(self) -> list[str]:
        return list(dict.fromkeys(m for c in self.conditions for m in c.base_models))


def _require(section: dict[str, Any], keys: tuple[str, ...], where: str) -> None:
    for key in keys:
        if key not in section:
            raise LieError(f"{where}.{key} is missing")


def _arms(section: Any, experiments: Mapping[str, Any], seen: dict[str, str], where: str) -> tuple[Arm, ...]:
    if not isinstance(section, dict) or not section:
        raise LieError(f"{where} must map arm names to {{label, runs}}")
    arms = []
    for name, arm in section.items():
        at = f"{where}.{name}"
        if not isinstance(arm, dict) or not isinstance(arm.get("runs"), list) or not arm["runs"]:
            raise LieError(f"{at} must have a label and a non-empty list of runs")
        for run in arm["runs"]:
            if run not in experiments:
                raise LieError(f"{at}.runs names {run!r}, which is not in experiments")
            if run in seen:
                raise LieError(f"{at}.runs names {run!r}, already in {seen[run]}")
            seen[run] = at
        arms.append(Arm(name, str(arm.get("label") or name), tuple(arm["runs"])))
    return tuple(arms)


def _pair(value: Any, where: str, kind: type) -> tuple[Any, Any]:
    if not (isinstance(value, list) and len(value) == 2 and value[0] <= value[1]):
        raise LieError(f"{where} must be [low, high] with low <= high, got {value!r}")
    return kind(value[0]), kind(value[1])


def _condition(name: str, section: Any, config: Config, seen: dict[str, str]) -> Condition:
    where = f"study.conditions.{name}"
    if not isinstance(section, dict):
        raise LieError(f"{where} must be a mapping")
    _require(section, ("label", "depths", "trap_index", "prediction", "arms"), where)
    if ("base_model" in section) == ("base_models" in section):
        raise LieError(f"{where} needs base_model (one supervised model) or base_models (a list), not both")
    bases = section.get("base_models") or [section.get("base_model")]
    if not isinstance(bases, list) or not all(isinstance(b, str) for b in bases):
        raise LieError(f"{where}.base_models must be a list of model names, got {bases!r}")
    for base in bases:
        if base not in config.evaluation.base_models:
            raise LieError(f"{where}: base model {base!r} is not in evaluation.base_models")
    if section["prediction"] not in PREDICTIONS:
        raise LieError(f"{where}.prediction must be one of {PREDICTIONS}, got {section['prediction']!r}")
    arms = _arms(section["arms"], config.experiments, seen, f"{where}.arms")
    for arm in arms:
        for run in arm.runs:
            if config.experiments[run].model not in bases:
                raise LieError(
                    f"{where}: run {run} starts from {config.experiments[run].model!r}, not from one of {bases}"
                )
    return Condition(
        name,
        str(section["label"]),
        tuple(bases),
        _pair(section["depths"], f"{where}.depths", int),
        _pair(section["trap_index"], f"{where}.trap_index", float),
        section["prediction"],
        arms,
    )


def study_spec(config: Config) -> StudySpec:
    """The checked ``study:`` section of ``config``."""
    section = config.study
    if not isinstance(section, dict):
        raise LieError(
            "config has no study: section (conditions, bench, ...); "
            "run the study with --configfile workflow/configs/study.yaml"
        )
    third = _third(section["third"]) if section.get("third") is not None else None
    keys = ("conditions", "bench", "baseline", "primary", "length_only", "probe")
    # the third registration's gates and test are its own (study.third): no first-registration rule
    _require(section, keys if third else (*keys, "gates", "verdict"), "study")
    if third and section.get("tests") is not None:
        raise LieError("study: give tests (the second registration) or third (the third), not both")
    bench = section["bench"]
    if bench not in config.evaluation.benchmarks:
        raise LieError(f"study.bench {bench!r} is not in evaluation.benchmarks")
    if not isinstance(section["conditions"], dict) or not section["conditions"]:
        raise LieError("study.conditions must map condition names to their settings")
    seen: dict[str, str] = {}
    conditions = tuple(_condition(n, c, config, seen) for n, c in section["conditions"].items())
    for key in ("baseline", "primary"):
        for c in conditions:
            if c.arm(section[key]) is None:
                raise LieError(f"study.{key} {section[key]!r} is not an arm of study.conditions.{c.name}")
    probe = section["probe"]
    _require(probe, ("n", "seed"), "study.probe")
    if third:  # G1 and G2 on their bounds; no first-registration verdict rule
        gates = {"step_accuracy": third.step_accuracy, "full_depth_accuracy": third.full_depth_accuracy,
                 "full_depth_samples": 1}  # fmt: skip
        verdict = {"min_positive_seeds": 0, "zero_margin": 0.0}
    else:
        gates, verdict = section["gates"], section["verdict"]
    _require(gates, ("step_accuracy", "full_depth_accuracy", "full_depth_samples"), "study.gates")
    _require(verdict, ("min_positive_seeds", "zero_margin"), "study.verdict")
    tests = _tests(section.get("tests"), conditions) if section.get("tests") is not None else None
    return StudySpec(
        conditions=conditions,
        bench=bench,
        baseline=section["baseline"],
        primary=section["primary"],
        length_only=section["length_only"],
        probe_n=int(probe["n"]),
        probe_seed=int(probe["seed"]),
        gates=Gates(
            float(gates["step_accuracy"]),
            float(gates["full_depth_accuracy"]),
            int(gates["full_depth_samples"]),
        ),
        min_positive_seeds=int(verdict["min_positive_seeds"]),
        zero_margin=float(verdict["zero_margin"]),
        tests=tests,
        third=third,
    )


def training_limit(config: Config, spec: StudySpec) -> int:
    """The token limit the study's runs trained with (their ``max_response_length``, through each run's
    settings): the budget at which a response counts as graded right. The runs must share it."""

    limits = {config.run(run).max_response_length for run in spec.runs}
    if len(limits) != 1:
        raise LieError(f"study: the runs must share one max_response_length, got {sorted(limits)}")
    return limits.pop()


THIRD_KEYS = (
    "forced_probe", "step_accuracy", "full_depth_accuracy", "max_right_per_run", "run_samples",
    "binding_median", "alpha", "smallest_effect", "power",
)  # fmt: skip


def _third(section: Any) -> ThirdRegistration:
    where = "study.third"
    if not isinstance(section, dict):
        raise LieError(f"{where} must be a mapping with keys {', '.join(THIRD_KEYS)}")
    unknown = sorted(set(section) - set(THIRD_KEYS))
    if unknown:
        raise LieError(f"{where}: unknown key(s) {', '.join(unknown)}; valid: {', '.join(THIRD_KEYS)}")
    _require(section, THIRD_KEYS, where)
    probe = section["forced_probe"]
    if not isinstance(probe, dict):
        raise LieError(f"{where}.forced_probe must be a mapping of n and seed")
    _require(probe, ("n", "seed"), f"{where}.forced_probe")
    for key in ("step_accuracy", "full_depth_accuracy", "alpha", "power"):
        if not 0 < float(section[key]) < 1:
            raise LieError(f"{where}.{key} must be in (0, 1), got {section[key]!r}")
    for key in ("max_right_per_run", "binding_median", "smallest_effect"):
        if float(section[key]) < 0:
            raise LieError(f"{where}.{key} must be >= 0, got {section[key]!r}")
    if int(section["run_samples"]) < 1 or int(probe["n"]) < 1:
        raise LieError(f"{where}.run_samples and {where}.forced_probe.n must be >= 1")
    return ThirdRegistration(
        forced_n=int(probe["n"]),
        forced_seed=int(probe["seed"]),
        step_accuracy=float(section["step_accuracy"]),
        full_depth_accuracy=float(section["full_depth_accuracy"]),
        max_right_per_run=float(section["max_right_per_run"]),
        run_samples=int(section["run_samples"]),
        binding_median=float(section["binding_median"]),
        alpha=float(section["alpha"]),
        smallest_effect=float(section["smallest_effect"]),
        power=float(section["power"]),
    )


def _tests(section: Any, conditions: tuple[Condition, ...]) -> RegisteredTests:
    where = "study.tests"
    if not isinstance(section, dict):
        raise LieError(f"{where} must be a mapping")
    _require(section, ("alpha", "power", "strong", "weak", "strength", "persistence"), where)
    names = [c.name for c in conditions]
    for key in ("strong", "weak"):
        if section[key] not in names:
            raise LieError(f"{where}.{key} {section[key]!r} is not one of study.conditions {names}")
    strength = section["strength"]
    if not isinstance(strength, dict) or sorted(strength) != sorted(names):
        raise LieError(f"{where}.strength must give every condition ({names}) a number, got {strength!r}")
    for key in ("alpha", "power"):
        if not 0 < float(section[key]) < 1:
            raise LieError(f"{where}.{key} must be in (0, 1), got {section[key]!r}")
    persistence = section["persistence"]
    if not isinstance(persistence, dict):
        raise LieError(f"{where}.persistence must be a mapping of steps and threshold")
    _require(persistence, ("steps", "threshold"), f"{where}.persistence")
    return RegisteredTests(
        alpha=float(section["alpha"]),
        power=float(section["power"]),
        strong=str(section["strong"]),
        weak=str(section["weak"]),
        strength={str(k): float(v) for k, v in strength.items()},
        persistence_steps=int(persistence["steps"]),
        persistence_threshold=float(persistence["threshold"]),
    )
