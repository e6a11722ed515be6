"""The gates on the supervised models, checked before any RL run (``lie study-gates``).

Read from the probe's per-response columns (``lie study-probe``, ``lie evaluate``, ``lie
study-responses``: each supervised model sampled as the rollouts sample, on every test problem)
and compared with the pre-registered thresholds of ``study.gates`` and each condition's
``trap_index`` range:

- step accuracy (all test depths): the share of written steps that apply the next operation to the
  value before, correctly (depth worth writing);
- accuracy given full depth (all test depths, where full solutions are frequent enough to count):
  samples that wrote at least the steps needed are right this often, with at least
  ``full_depth_samples`` of them;
- trap index (the condition's test depths): the share of problems whose ``study.probe.n`` samples
  all get the same grade at the training limit, inside the condition's range (strong: most groups
  give GRPO nothing from accuracy; weak: fewer than half).

Beside each measurement, the analytic value computed from the supervised stage's ``stop_prob``
alone (every written step right) and with the measured step accuracy (``lie.study.trap``).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from lie.config.layout import Layout
from lie.config.typed import Config
from lie.core.errors import LieError
from lie.study import trap
from lie.study.decision import read_gates
from lie.study.paths import StudyPaths
from lie.study.responses import read_responses
from lie.study.spec import Condition, StudySpec, study_spec, training_limit

log = logging.getLogger(__name__)


class _Gated:
    """A row of gates: it passes when its three gates pass (a mixin: no fields of its own)."""

    step_gate: bool
    full_depth_gate: bool
    trap_gate: bool

    @property
    def passed(self) -> bool:
        return self.step_gate and self.full_depth_gate and self.trap_gate

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "passed": self.passed}  # type: ignore[call-overload]


@dataclass(frozen=True)
class GateResult(_Gated):
    condition: str
    base_model: str
    stop_prob: float
    depths: str
    problems: int
    samples: int
    full_share_analytic: float
    full_share: float  # samples that wrote the full depth (the condition's depths)
    trap_analytic: float  # every written step right
    trap_analytic_measured: float  # with the measured step accuracy
    trap_index: float
    trap_low: float
    trap_high: float
    step_accuracy: float
    full_depth_samples: int
    full_depth_accuracy: float | None
    step_gate: bool
    full_depth_gate: bool
    trap_gate: bool


def condition_rows(rows: Sequence[dict[str, Any]], condition: Condition) -> list[dict[str, Any]]:
    """The responses to test problems of the condition's depths."""
    low, high = condition.depths
    return [r for r in rows if low <= r["depth_needed"] <= high]


def groups(rows: Sequence[dict[str, Any]], budget: str) -> list[list[bool]]:
    """Per problem, its samples' grades at ``budget``."""
    by_problem: dict[tuple[str, int], list[bool]] = defaultdict(list)
    for r in rows:
        if budget not in r["correct"]:
            raise LieError(f"no grade at budget {budget} (evaluation.budgets must hold the training limit)")
        by_problem[(r["bench"], r["index"])].append(bool(r["correct"][budget]))
    return list(by_problem.values())


def stop_prob(config: Config, model: str) -> float:
    sft = config.model(model).sft
    if sft is None:
        raise LieError(f"models.{model} has no sft: section; the study's base models are supervised")
    return sft.stop_prob


def measure(
    config: Config,
    spec: StudySpec,
    condition: Condition,
    rows: Sequence[dict[str, Any]],
    base_model: str | None = None,
) -> GateResult:
    """The gates of one condition from the probe responses of one of its supervised models (the first
    by default)."""
    base_model = base_model or condition.base_model
    budget = str(training_limit(config, spec))
    mine = condition_rows(rows, condition)
    if not mine:
        raise LieError(f"condition {condition.name}: no probe responses of depth {condition.depths}")
    written = sum(r["depth_written"] for r in rows)
    step_accuracy = sum(r["steps_right"] for r in rows) / written if written else 0.0
    full = [r for r in rows if r["depth_written"] >= r["depth_needed"]]
    full_accuracy = sum(bool(r["correct"][budget]) for r in full) / len(full) if full else None
    s, gates = stop_prob(config, base_model), spec.gates
    index = trap.trap_index(groups(mine, budget))
    low, high = condition.trap_index
    return GateResult(
        condition=condition.name,
        base_model=base_model,
        stop_prob=s,
        depths=f"{condition.depths[0]}-{condition.depths[1]}",
        problems=len({(r["bench"], r["index"]) for r in mine}),
        samples=len(mine),
        full_share_analytic=trap.analytic_full_share(s, condition.depths),
        full_share=sum(r["depth_written"] >= r["depth_needed"] for r in mine) / len(mine),
        trap_analytic=trap.analytic_trap_index(s, condition.depths, spec.probe_n),
        trap_analytic_measured=trap.analytic_trap_index(s, condition.depths, spec.probe_n, step_accuracy),
        trap_index=index,
        trap_low=low,
        trap_high=high,
        step_accuracy=step_accuracy,
        full_depth_samples=len(full),
        full_depth_accuracy=full_accuracy,
        step_gate=step_accuracy >= gates.step_accuracy,
        full_depth_gate=full_accuracy is not None
        and len(full) >= gates.full_depth_samples
        and full_accuracy >= gates.full_depth_accuracy,
        trap_gate=low <= index <= high,
    )


@dataclass(frozen=True)
class ThirdGateResult(_Gated):
    """One supervised model's gates of the third registration (preregistration-v3.md): G1 and G2 read
    on the forced-depth probe, G3 on the natural probe, each on its one-sided 95% bound."""

    condition: str
    base_model: str
    stop_prob: float
    problems: int
    forced_samples: int
    steps_written: int
    steps_right: int
    step_accuracy: float
    step_low: float  # G1: Wilson lower bound
    forced_right: int
    full_depth_accuracy: float
    full_low: float  # G2: Wilson lower bound
    natural_samples: int
    natural_right: int
    natural_full_share: float  # natural samples that wrote the full depth
    full_share_analytic: float  # (1 - stop) ** k, every depth alike
    right_per_run_high: float  # G3: Clopper-Pearson upper bound x a run's samples
    natural_trap_index: float  # natural probe: groups whose samples all got the same grade
    step_gate: bool
    full_depth_gate: bool
    trap_gate: bool


def measure_third(
    config: Config,
    spec: StudySpec,
    condition: Condition,
    forced: Sequence[dict[str, Any]],
    natural: Sequence[dict[str, Any]],
    base_model: str,
) -> ThirdGateResult:
    """The third registration's gates of one supervised model, from its two probes' response columns."""
    third = spec.third
    if third is None:
        raise LieError("the third registration's gates need study.third")
    budget = str(training_limit(config, spec))
    forced, natural = condition_rows(forced, condition), condition_rows(natural, condition)
    if not forced or not natural:
        raise LieError(
            f"{base_model}: no probe responses of depth {condition.depths} (forced: {len(forced)}, natural: "
            f"{len(natural)})"
        )
    written = sum(r["depth_written"] for r in forced)
    right_steps = sum(r["steps_right"] for r in forced)
    forced_right = sum(bool(r["correct"][budget]) for r in forced)
    natural_right = sum(bool(r["correct"][budget]) for r in natural)
    if written < 1:
        raise LieError(f"{base_model}: the forced-depth probe wrote no step; is the model a chain model?")
    reading = read_gates(
        right_steps, written, forced_right, len(forced), natural_right, len(natural),
        step_accuracy=third.step_accuracy, full_depth_accuracy=third.full_depth_accuracy,
        max_right_per_run=third.max_right_per_run, run_samples=third.run_samples,
    )  # fmt: skip
    s = stop_prob(config, base_model)
    return ThirdGateResult(
        condition=condition.name,
        base_model=base_model,
        stop_prob=s,
        problems=len({(r["bench"], r["index"]) for r in natural}),
        forced_samples=len(forced),
        steps_written=written,
        steps_right=right_steps,
        step_accuracy=right_steps / written,
        step_low=reading.step_low,
        forced_right=forced_right,
        full_depth_accuracy=forced_right / len(forced),
        full_low=reading.full_low,
        natural_samples=len(natural),
        natural_right=natural_right,
        natural_full_share=sum(r["depth_written"] >= r["depth_needed"] for r in natural) / len(natural),
        full_share_analytic=trap.analytic_full_share(s, condition.depths),
        right_per_run_high=reading.right_per_run_high,
        natural_trap_index=trap.trap_index(groups(natural, budget)),
        step_gate=reading.passed[0],
        full_depth_gate=reading.passed[1],
        trap_gate=reading.passed[2],
    )


def measure_all(config: Config) -> list[GateResult] | list[ThirdGateResult]:
    """Every condition's gates, from the probe files of each of its supervised models."""
    spec = study_spec(config)
    paths = StudyPaths(Layout(config))
    rows = {m: read_responses(paths.probe_responses(m)) for m in spec.base_models}
    if spec.third:
        forced = {m: read_responses(paths.probe_responses(m, forced=True)) for m in spec.base_models}
        return [
            measure_third(config, spec, c, forced[m], rows[m], m)
            for c in spec.conditions
            for m in c.base_models
        ]
    return [measure(config, spec, c, rows[m], m) for c in spec.conditions for m in c.base_models]


def _yes(ok: bool) -> str:
    return "pass" if ok else "**FAIL**"


def third_gates_markdown(spec: StudySpec, results: Sequence[ThirdGateResult]) -> str:
    third = spec.third
    assert third is not None
    lines = [
        "# Gates on the supervised models (before any RL run)",
        "",
        "Generated by `lie study-gates`; thresholds registered in `docs/study/preregistration-v3.md`, each read "
        "on a one-sided 95% bound. Forced-depth probe: "
        f"{third.forced_n} samples a test problem, no end of sequence or boxed answer before the problem's depth "
        f"is written (G1 step accuracy, G2 full-depth accuracy: Wilson lower bounds). Natural probe: "
        f"{spec.probe_n} samples a test problem, as the rollouts sample (G3: the Clopper-Pearson upper bound of "
        f"its accuracy times a run's {third.run_samples} training samples: right samples a GRPO run may see).",
        "",
        f"| model | stop prob | problems | G1 step accuracy: right / written, estimate, lower bound [≥ "
        f"{third.step_accuracy:g}] | G2 full-depth accuracy: right / samples, estimate, lower bound [≥ "
        f"{third.full_depth_accuracy:g}] | G3 natural probe: right / samples, upper bound per run [≤ "
        f"{third.max_right_per_run:g}] | natural full depth written: analytic / measured | natural trap index | "
        "gates |",
        "|:---|---:|---:|---:|---:|---:|---:|---:|:---:|",
    ]
    for r in results:
        lines.append(
            f"| {r.base_model} | {r.stop_prob:g} | {r.problems} | {r.steps_right} / {r.steps_written}, "
            f"{r.step_accuracy:.3f}, {r.step_low:.3f} {_yes(r.step_gate)} | {r.forced_right} / {r.forced_samples}, "
            f"{r.full_depth_accuracy:.3f}, {r.full_low:.3f} {_yes(r.full_depth_gate)} | {r.natural_right} / "
            f"{r.natural_samples}, {r.right_per_run_high:.2f} {_yes(r.trap_gate)} | {r.full_share_analytic:.4f} / "
            f"{r.natural_full_share:.4f} | {r.natural_trap_index:.3f} | {_yes(r.passed)} |"
        )
    return "\n".join(lines) + "\n"


def gates_markdown(spec: StudySpec, results: Sequence[GateResult] | Sequence[ThirdGateResult]) -> str:
    """The gates table of the registration ``spec`` runs (the third has its own gates and rows)."""
    if spec.third:
        return third_gates_markdown(spec, [r for r in results if isinstance(r, ThirdGateResult)])
    return _first_gates_markdown(spec, [r for r in results if isinstance(r, GateResult)])


def _first_gates_markdown(spec: StudySpec, results: Sequence[GateResult]) -> str:
    g = spec.gates
    lines = [
        "# Gates on the supervised models (before any RL run)",
        "",
        f"Generated by `lie study-gates`. Each supervised model sampled as the rollouts sample it "
        f"({spec.probe_n} samples per test problem, training temperature and length limit), graded by "
        "the pipeline. Full depth written and the trap index: the condition's test depths; step accuracy "
        "and accuracy given full depth: every test depth. Thresholds pre-registered in "
        f"`docs/study/{'preregistration-v2.md' if spec.tests else 'preregistration.md'}`. Analytic: from the supervised stage's stop probability "
        "alone (every written step right), then with the measured step accuracy.",
        "",
        "| condition | model | stop prob | depths | problems × samples | full depth written: analytic / measured "
        f"| trap index: analytic / with measured step acc. / measured [gate] | step accuracy [≥ {g.step_accuracy}] "
        f"| accuracy given full depth [≥ {g.full_depth_accuracy}, n ≥ {g.full_depth_samples}] | gates |",
        "|:---|:---|---:|:---:|---:|---:|---:|---:|---:|:---:|",
    ]
    for r in results:
        full_acc = "—" if r.full_depth_accuracy is None else f"{r.full_depth_accuracy:.2f}"
        lines.append(
            f"| {r.condition} | {r.base_model} | {r.stop_prob:g} | {r.depths} | {r.problems} × "
            f"{r.samples // max(r.problems, 1)} | {r.full_share_analytic:.3f} / {r.full_share:.3f} | "
            f"{r.trap_analytic:.2f} / {r.trap_analytic_measured:.2f} / {r.trap_index:.2f} "
            f"[{r.trap_low:g}, {r.trap_high:g}] {_yes(r.trap_gate)} | {r.step_accuracy:.3f} {_yes(r.step_gate)} | "
            f"{full_acc} (n = {r.full_depth_samples}) {_yes(r.full_depth_gate)} | {_yes(r.passed)} |"
        )
    return "\n".join(lines) + "\n"


def failures(results: Sequence[GateResult] | Sequence[ThirdGateResult]) -> list[str]:
    """One phrase per failed gate (naming the supervised model where a condition has several)."""
    if results and isinstance(results[0], ThirdGateResult):
        return third_failures(results)  # type: ignore[arg-type]
    return _failures(results)  # type: ignore[arg-type]


GATE_NAMES = {  # the third registration's gates: the CSV's column, its name and the bound it is read on
    "step_gate": ("G1 step accuracy", "step_low"),
    "full_depth_gate": ("G2 full-depth accuracy", "full_low"),
    "trap_gate": ("G3 right samples per run", "right_per_run_high"),
}


def gates_outcome(csv_path: Path) -> tuple[bool, str]:
    """Read the gates' table as ``lie study-gates`` wrote it: whether every gate passed, and the outcome in
    one line (each failed gate with the bound it was read on)."""
    import csv

    if not csv_path.is_file():
        raise LieError(f"{csv_path}: no gates' table; run the study_gates target first")
    with csv_path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    if not rows or any("passed" not in r or "base_model" not in r for r in rows):
        raise LieError(f"{csv_path}: not a gates' table (no rows, or no passed / base_model column)")
    failed = []
    for row in rows:
        for column, (name, bound) in GATE_NAMES.items():
            if row.get(column) == "False":
                value = f" {float(row[bound]):.3f}" if row.get(bound) else ""
                failed.append(f"{row['base_model']} {name.split()[0]}{value}")
    passed = all(r["passed"] == "True" for r in rows)
    if passed:
        return True, f"every gate passed on {len(rows)} supervised model(s) ({csv_path})"
    names = ", ".join(failed) or ", ".join(r["base_model"] for r in rows if r["passed"] != "True")
    return False, (
        f"stopped at the registered gates, before any RL run, without a verdict (a registered outcome): "
        f"failed {names} ({csv_path.with_suffix('.md')})"
    )


def third_failures(results: Sequence[ThirdGateResult]) -> list[str]:
    out = []
    for r in results:
        if not r.step_gate:
            out.append(f"{r.base_model}: G1 step accuracy's lower bound {r.step_low:.3f}")
        if not r.full_depth_gate:
            out.append(f"{r.base_model}: G2 full-depth accuracy's lower bound {r.full_low:.3f}")
        if not r.trap_gate:
            out.append(f"{r.base_model}: G3 right samples per run, upper bound {r.right_per_run_high:.2f}")
    return out


def _failures(results: Sequence[GateResult]) -> list[str]:
    several = {r.condition for r in results if sum(q.condition == r.condition for q in results) > 1}

    def _of(r: GateResult) -> str:
        return f" ({r.base_model})" if r.condition in several else ""

    out = []
    for r in results:
        if not r.step_gate:
            out.append(f"{r.condition}{_of(r)}: step accuracy {r.step_accuracy:.3f}")
        if not r.full_depth_gate:
            out.append(
                f"{r.condition}{_of(r)}: accuracy given full depth {r.full_depth_accuracy} "
                f"(n = {r.full_depth_samples})"
            )
        if not r.trap_gate:
            out.append(
                f"{r.condition}{_of(r)}: trap index {r.trap_index:.2f} outside [{r.trap_low:g}, {r.trap_high:g}]"
            )
    return out
