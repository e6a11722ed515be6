"""What the study's figures and tables are drawn from (``lie study-report``): every file of a finished
study read once into :class:`StudyData` (:func:`collect`), and its bands over seeds. The figures
(``lie.study.figures``) and the tables (``lie.study.report``, which also draws the figures) both read it,
so that the imports run one way: data, then figures, then report.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lie.config.layout import Layout
from lie.config.typed import Config
from lie.study.gates import GateResult, ThirdGateResult, measure_all
from lie.study.inputs import EvalSummary, StepPoint, eval_summary, run_curve
from lie.study.paths import StudyPaths
from lie.study.responses import read_responses
from lie.study.spec import StudySpec, study_spec, training_limit


@dataclass(frozen=True)
class Band:
    """Mean, min and max over seeds, on the x values every seed has."""

    x: list[int]
    mean: list[float]
    low: list[float]
    high: list[float]


def band(series: Sequence[dict[int, float]]) -> Band:
    """Aggregate per-seed ``{x: value}`` on the x values common to all seeds."""
    common = sorted(set.intersection(*(set(s) for s in series))) if series else []
    values = [[s[x] for s in series] for x in common]
    return Band(common, [sum(v) / len(v) for v in values], [min(v) for v in values], [max(v) for v in values])


def running_mean(values: Sequence[float], window: int) -> list[float]:
    """Trailing running mean (the first points average what there is)."""
    out = []
    for i in range(len(values)):
        chunk = values[max(0, i - window + 1) : i + 1]
        out.append(sum(chunk) / len(chunk))
    return out


@dataclass
class StudyData:
    spec: StudySpec
    curves: dict[str, list[StepPoint]]  # run -> steps
    evals: dict[tuple[str, str], EvalSummary]  # (condition, run or base model) -> test responses
    gates: list[GateResult] | list[ThirdGateResult]
    train_limit: int
    seeds: dict[str, Any]  # run -> its pairing key: the RL seed, or "<supervised model>/s<seed>" with several

    def arm_band(self, arm_runs: Sequence[str], metric: str) -> Band:
        return band([{p.step: getattr(p, metric) for p in self.curves[run]} for run in arm_runs])

    def budget_band(self, condition: str, keys: Sequence[str]) -> Band:
        return band([self.evals[(condition, key)].accuracy for key in keys])


def collect(config: Config) -> StudyData:
    """Everything the figures and tables need, read from the files of a finished study."""
    spec = study_spec(config)
    paths = StudyPaths(Layout(config))
    curves = {run: run_curve(config, run) for run in spec.runs}
    evals = {}
    for c in spec.conditions:
        for key in [*c.runs, *c.base_models]:
            where = str(paths.responses(key))
            evals[(c.name, key)] = eval_summary(read_responses(paths.responses(key)), c.depths, where)
    limit = training_limit(config, spec)
    seeds = {}
    for c in spec.conditions:
        for run in c.runs:
            seed = config.run(run).seed or 0
            several = len(c.base_models) > 1
            seeds[run] = f"{config.experiments[run].model}/s{seed}" if several else seed
    return StudyData(spec, curves, evals, measure_all(config), limit, seeds)
