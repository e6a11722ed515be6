"""The study's figures and tables, per condition, from files only (``lie study-report``).

Reads a finished study's files (``lie.study.data.collect``: the runs' rollouts, the per-response
columns of every evaluation, ``lie study-responses``, and of the probes, ``lie study-probe``); writes
under the config's ``outdir`` (``lie.study.paths.study_paths``):

- ``figures/study_dynamics.png``: per condition (rows), accuracy, trap index, response length,
  ``C_context``, ``R_context`` and the looping share against the training step, a mean line and a
  min-max band over seeds per arm (drawn as a running mean over ``lie.study.figures.SMOOTH`` steps);
- ``figures/study_budget.png``: per condition, accuracy against the test-time budget per arm, with
  the supervised model; ``figures/study.png``: both, one figure for the README;
- ``tables/study_steps.csv`` (per run and step), ``tables/study_budget.csv`` (per model, condition
  and budget), ``tables/study_summary.csv`` (per condition and arm: mean, min, max over seeds),
  ``tables/study_paired.csv`` (arm minus baseline by seed, mean and 95% interval, verdicts) and
  ``tables/study_summary.md``: the pre-registered comparison, the gates, then per condition the
  arms and their paired differences; ``tables/study_tests.csv``: the second registration's tests
  (:mod:`lie.study.registered`), also at the top of the markdown.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lie.config.layout import Layout
from lie.config.typed import Config
from lie.core.errors import LieError
from lie.formats.jsonl import atomic_output
from lie.report.render import csv_text
from lie.study.data import StudyData, collect
from lie.study.decision import (
    Binding,
    binding,
    decision_markdown,
    decision_rows,
    read_successes,
    run_successes,
)
from lie.study.figures import budget_figure, combined_figure, dynamics_figure
from lie.study.gates import gates_markdown
from lie.study.inputs import StepPoint
from lie.study.paired import Paired, paired, verdict
from lie.study.paths import study_paths
from lie.study.registered import (
    Persistence,
    persistence,
    pool,
    qualified,
    read_curves,
    read_effects,
    registered_rows,
    tests_markdown,
)
from lie.study.spec import Condition, StudySpec

log = logging.getLogger(__name__)

ESCAPE_BELOW = 0.6  # a run has escaped the trap at the first step whose trap index is below this
EDGE_STEPS = 5  # "first" and "last" training steps averaged in the summary table

# (column, title, digits): per model and condition; "train_" columns are runs only.
SUMMARY_COLUMNS = (
    ("acc_limit", "accuracy @ training limit", 3),
    ("acc_max", "accuracy @ largest budget", 3),
    ("strict", "strict boxed accuracy", 3),
    ("depth_reached", "depth reached (test)", 2),
    ("full_reached", "share reaching full depth (test)", 3),
    ("eval_length", "eval length (tokens)", 1),
    ("eval_c_context", "eval C_context", 1),
    ("eval_r_context", "eval R_context", 3),
    ("eval_loop", "eval looping share", 3),
    ("train_acc_last", f"train accuracy, last {EDGE_STEPS} steps", 3),
    ("train_trap_first", f"trap index, first {EDGE_STEPS} steps", 2),
    ("train_trap_last", f"trap index, last {EDGE_STEPS} steps", 2),
    ("train_trap_mean", "trap index, all steps", 3),
    ("train_zero_adv_mean", "zero-advantage groups (own reward), all steps", 3),
    ("train_right", "right training samples per run", 1),
    ("train_len_applied", "share of samples R_len applied", 4),
    ("escaped", f"share of runs whose trap index fell below {ESCAPE_BELOW}", 2),
    ("escape_step", f"escape step (first trap index < {ESCAPE_BELOW}; escaped runs)", 1),
    ("train_len_first", f"train length, first {EDGE_STEPS} steps", 1),
    ("train_len_last", f"train length, last {EDGE_STEPS} steps", 1),
    ("train_loop_last", f"train looping share, last {EDGE_STEPS} steps", 3),
    ("train_red_applied", "share of samples R_red penalised", 4),
)
DIGITS = {c: d for c, _, d in SUMMARY_COLUMNS}
TITLES = {c: t for c, t, _ in SUMMARY_COLUMNS}
# Paired differences (arm minus baseline, same seed) reported for every arm.
PAIRED_COLUMNS = (
    "acc_limit", "acc_max", "depth_reached", "full_reached", "eval_length", "eval_loop",
    "train_trap_mean", "train_zero_adv_mean", "train_loop_last",
)  # fmt: skip


@dataclass(frozen=True)
class Prediction:
    """A pre-registered comparison (docs/study/preregistration.md): ``minuend - subtrahend`` on ``column``."""

    name: str
    text: str
    minuend: str  # arm name, resolved from the spec
    subtrahend: str
    column: str
    prediction: str  # "positive" or "zero"


def predictions(spec: StudySpec, condition: Condition) -> list[Prediction]:
    """The primary comparison of ``condition``, and in a "positive" condition the secondary ones."""
    out = [
        Prediction("primary", "GRPO + LIE minus GRPO, test accuracy at the training limit", spec.primary,
                   spec.baseline, "acc_limit", condition.prediction)
    ]  # fmt: skip
    if condition.prediction != "positive":
        return out
    if condition.arm(spec.length_only) is not None:
        out += [
            Prediction("S1", "length-only arm loops more than LIE (test)", spec.length_only, spec.primary,
                       "eval_loop", "positive"),
            Prediction("S1b", "length-only arm loops more than LIE (training, last steps)", spec.length_only,
                       spec.primary, "train_loop_last", "positive"),
        ]  # fmt: skip
    out += [
        Prediction("S2", "LIE lowers the trap index (training, all steps): GRPO minus LIE", spec.baseline,
                   spec.primary, "train_trap_mean", "positive"),
        Prediction("S3", "LIE reaches deeper at test: depth reached, LIE minus GRPO", spec.primary,
                   spec.baseline, "depth_reached", "positive"),
    ]  # fmt: skip
    return out


# ---- tables


def _edge(points: Sequence[StepPoint], metric: str, last: bool) -> float:
    chosen = points[-EDGE_STEPS:] if last else points[:EDGE_STEPS]
    return sum(getattr(p, metric) for p in chosen) / len(chosen)


def escape_step(points: Sequence[StepPoint]) -> int | None:
    """The first training step whose trap index is below :data:`ESCAPE_BELOW` (None: never)."""
    return next((p.step for p in points if p.trap_index < ESCAPE_BELOW), None)


def _sample_share(points: Sequence[StepPoint], metric: str) -> float:
    """A per-sample share over all steps (steps weighted by their samples)."""
    return sum(getattr(p, metric) * p.samples for p in points) / sum(p.samples for p in points)


def key_summary(data: StudyData, condition: str, key: str) -> dict[str, float | None]:
    """Every summary column of one model (a run, or the supervised base model) in one condition."""
    e = data.evals[(condition, key)]
    out: dict[str, float | None] = {
        "acc_limit": e.accuracy.get(data.train_limit),
        "acc_max": e.accuracy[max(e.accuracy)],
        "strict": e.strict,
        "depth_reached": e.depth_reached,
        "full_reached": e.full_reached,
        "eval_length": e.length,
        "eval_c_context": e.c_context,
        "eval_r_context": e.r_context,
        "eval_loop": e.loop_share,
    }
    points = data.curves.get(key)
    for name, metric, last in (
        ("train_acc_last", "accuracy", True),
        ("train_trap_first", "trap_index", False),
        ("train_trap_last", "trap_index", True),
        ("train_len_first", "response_length", False),
        ("train_len_last", "response_length", True),
        ("train_loop_last", "loop_share", True),
    ):
        out[name] = _edge(points, metric, last) if points else None
    out["train_trap_mean"] = sum(p.trap_index for p in points) / len(points) if points else None
    out["train_zero_adv_mean"] = sum(p.zero_adv_share for p in points) / len(points) if points else None
    out["train_right"] = float(run_successes(points)) if points else None
    out["train_red_applied"] = _sample_share(points, "red_applied") if points else None
    out["train_len_applied"] = _sample_share(points, "len_applied") if points else None
    step = escape_step(points) if points else None
    out["escaped"] = float(step is not None) if points else None
    out["escape_step"] = float(step) if step is not None else None
    return out


def summary_rows(data: StudyData) -> list[dict[str, Any]]:
    """Per condition: the supervised model, then each arm (mean, min and max over seeds)."""
    rows = []
    tests = data.spec.tests
    for c in data.spec.conditions:
        base = "supervised model (step 0)" if len(c.base_models) == 1 else "supervised models (step 0)"
        for name, label, keys in [
            ("base", base, c.base_models),
            *((a.name, a.label, a.runs) for a in c.arms),
        ]:
            per_run = [key_summary(data, c.name, key) for key in keys]
            row = {"condition": c.name, "arm": name, "label": label, "seeds": len(keys)}
            if tests:  # the second registration: the level's trap strength, the slope's x
                row = {"condition": c.name, "strength": tests.strength[c.name]} | row
            for col, _, _ in SUMMARY_COLUMNS:
                values: list[Any] = [r[col] for r in per_run if r[col] is not None]
                row[f"{col}_mean"] = sum(values) / len(values) if values else None
                row[f"{col}_min"] = min(values) if values else None
                row[f"{col}_max"] = max(values) if values else None
            rows.append(row)
    return rows


def per_seed(data: StudyData, condition: Condition, arm: str, column: str) -> dict[Any, float]:
    runs = condition.arm(arm).runs  # type: ignore[union-attr]
    return {data.seeds[run]: key_summary(data, condition.name, run)[column] for run in runs}  # type: ignore[misc]


def paired_rows(data: StudyData) -> list[dict[str, Any]]:
    """Every arm minus the baseline on :data:`PAIRED_COLUMNS`, then the pre-registered comparisons (in a
    config of the second registration, the first one's rule, its verdicts read with "the trap did not
    persist" where the second registration's persistence check fails)."""
    spec, rows, check = data.spec, [], registered_persistence(data)

    def row(c: Condition, comparison: str, column: str, p: Paired, **extra: Any) -> dict[str, Any]:
        half = p.half_width
        return {
            "condition": c.name, "comparison": comparison, "measure": column,
            "seeds": " ".join(str(s) for s in p.seeds), "diffs": " ".join(f"{d:.4f}" for d in p.diffs),
            "mean": p.mean, "low": None if half is None else p.mean - half,
            "high": None if half is None else p.mean + half, "positive": p.positive, "n": len(p.diffs),
            **extra,
        }  # fmt: skip

    for c in spec.conditions:
        base = c.arm(spec.baseline)
        for arm in c.arms:
            if arm is base:
                continue
            for column in PAIRED_COLUMNS:
                p = paired(per_seed(data, c, arm.name, column), per_seed(data, c, spec.baseline, column))
                rows.append(row(c, f"{arm.name} - {spec.baseline}", column, p))
        if spec.third:  # the third registration's one test is in study_tests.csv, with its verdict
            p = paired(
                per_seed(data, c, spec.primary, "acc_limit"), per_seed(data, c, spec.baseline, "acc_limit")
            )
            rows.append(row(c, f"{spec.primary} - {spec.baseline}", "acc_limit", p, registered="primary",
                            prediction="positive"))  # fmt: skip
            continue
        for pred in predictions(spec, c):
            p = paired(
                per_seed(data, c, pred.minuend, pred.column), per_seed(data, c, pred.subtrahend, pred.column)
            )
            rows.append(
                row(c, f"{pred.minuend} - {pred.subtrahend}", pred.column, p, registered=pred.name,
                    prediction=pred.prediction,
                    verdict=qualified(verdict(p, pred.prediction, spec.min_positive_seeds, spec.zero_margin),
                                      check))
            )  # fmt: skip
    return rows


def _fmt(value: float | None, digits: int, signed: bool = False) -> str:
    if value is None:
        return "—"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def _cell(row: dict[str, Any], column: str) -> str:
    digits = DIGITS[column]
    mean = row[f"{column}_mean"]
    if mean is None or row["seeds"] == 1:
        return _fmt(mean, digits)
    return (
        f"{_fmt(mean, digits)} [{_fmt(row[f'{column}_min'], digits)}, {_fmt(row[f'{column}_max'], digits)}]"
    )


def _interval(r: dict[str, Any], digits: int) -> str:
    if r["low"] is None:
        return _fmt(r["mean"], digits, True)
    return (
        f"{_fmt(r['mean'], digits, True)} [{_fmt(r['low'], digits, True)}, {_fmt(r['high'], digits, True)}]"
    )


def _diffs(r: dict[str, Any], digits: int) -> str:
    pairs = zip(r["seeds"].split(), r["diffs"].split())
    return ", ".join(f"{'s' if s.isdigit() else ''}{s}: {float(d):+.{digits}f}" for s, d in pairs)


def verdict_markdown(rows: Sequence[dict[str, Any]], continuity: bool = False) -> list[str]:
    title = "## The pre-registered comparison (docs/study/preregistration.md)"
    if continuity:  # a config of the second registration: the first one's rule, printed beside its tests
        title = "## The first registration's rule, for continuity only (docs/study/preregistration.md)"
    lines = [
        title,
        "",
        "Paired by seed (same supervised model, data order and first rollout batch). Mean with a 95% "
        "Student-t interval over seeds.",
        "",
        "| condition | id | comparison | measure | predicted | per seed | > 0 | mean [95% interval] | verdict |",
        "|:---|:---|:---|:---|:---|:---|---:|---:|:---|",
    ]
    for r in rows:
        if not r.get("registered"):
            continue
        digits = DIGITS[r["measure"]]
        lines.append(
            f"| {r['condition']} | {r['registered']} | {r['comparison']} | {TITLES[r['measure']]} | "
            f"{r['prediction']} | {_diffs(r, digits)} | {r['positive']}/{r['n']} | {_interval(r, digits)} | "
            f"**{r['verdict']}** |"
        )
    return lines


def condition_markdown(data: StudyData, c: Condition, summary: Sequence[dict[str, Any]],
                       paired_: Sequence[dict[str, Any]]) -> list[str]:  # fmt: skip
    budgets = sorted(data.evals[(c.name, c.base_model)].accuracy)
    e = data.evals[(c.name, c.base_model)]
    lines = [
        f"## {c.label} (condition `{c.name}`)",
        "",
        f"Test problems of depth {c.depths[0]}-{c.depths[1]} ({e.samples} samples of the supervised model; "
        f"a full solution takes {e.tokens_needed:.1f} tokens on average); budgets {budgets} tokens, "
        f"training limit {data.train_limit}. Cells: mean over seeds [min, max].",
        "",
        "| arm | seeds | " + " | ".join(t for _, t, _ in SUMMARY_COLUMNS) + " |",
        "|:---|---:|" + "---:|" * len(SUMMARY_COLUMNS),
    ]
    for row in summary:
        if row["condition"] == c.name:
            cells = [row["label"], str(row["seeds"]), *(_cell(row, col) for col, _, _ in SUMMARY_COLUMNS)]
            lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        f"Paired differences, arm minus {data.spec.baseline} with the same seed: per seed, mean [95% interval].",
        "",
        "| comparison | measure | per seed | > 0 | mean [95% interval] |",
        "|:---|:---|:---|---:|---:|",
    ]
    for r in paired_:
        if r["condition"] == c.name and not r.get("registered"):
            digits = DIGITS[r["measure"]]
            lines.append(
                f"| {r['comparison']} | {TITLES[r['measure']]} | {_diffs(r, digits)} | {r['positive']}/{r['n']} | "
                f"{_interval(r, digits)} |"
            )
    return lines


def registered_effects(data: StudyData) -> dict[str, list[float]]:
    """Per level, the per-pair differences GRPO + LIE minus GRPO on accuracy at the training limit."""
    spec = data.spec
    out = {}
    for c in spec.conditions:
        p = paired(
            per_seed(data, c, spec.primary, "acc_limit"), per_seed(data, c, spec.baseline, "acc_limit")
        )
        out[c.name] = list(p.diffs)
    return out


def registered_persistence(data: StudyData) -> Persistence | None:
    """The persistence check of the second registration (None without a ``study.tests`` section)."""
    tests = data.spec.tests
    if tests is None:
        return None
    arm = next(c for c in data.spec.conditions if c.name == tests.strong).arm(data.spec.baseline)
    curves = [{p.step: p.trap_index for p in data.curves[run]} for run in arm.runs]  # type: ignore[union-attr]
    return persistence(curves, tests.persistence_steps, tests.persistence_threshold)


def third_binding(data: StudyData) -> Binding:
    """The third registration's binding check on this study's GRPO runs."""
    third = data.spec.third
    assert third is not None
    runs = [run for c in data.spec.conditions for run in c.arm(data.spec.baseline).runs]  # type: ignore[union-attr]
    return binding([run_successes(data.curves[run]) for run in runs], third.binding_median)


def third_effects(data: StudyData) -> dict[str, float]:
    """Pair label (``model/sSEED``) -> GRPO + LIE minus GRPO, accuracy at the training limit."""
    spec, out = data.spec, {}
    for c in spec.conditions:
        p = paired(
            per_seed(data, c, spec.primary, "acc_limit"), per_seed(data, c, spec.baseline, "acc_limit")
        )
        out.update({str(seed): d for seed, d in zip(p.seeds, p.diffs)})
    return out


def third_rows(
    data: StudyData, effects: dict[str, float] | None = None, check: Binding | None = None
) -> list[dict[str, Any]]:
    third = data.spec.third
    assert third is not None
    return decision_rows(effects if effects is not None else third_effects(data), check or third_binding(data),
                         third.alpha, third.smallest_effect, third.power)  # fmt: skip


def tests_table(data: StudyData) -> list[dict[str, Any]]:
    """``study_tests.csv``: the registered tests, then the persistence check (empty for the first study,
    whose registration has none of them); the third registration's test, readouts and binding check."""
    if data.spec.third:
        return third_rows(data)
    tests, check = data.spec.tests, registered_persistence(data)
    if tests is None or check is None:
        return [{"test": "none", "comparison": "the first registration has no tests of this kind"}]
    rows = registered_rows(registered_effects(data), tests, check)
    rows.append({"test": "persistence", "comparison": f"GRPO's trap index in {tests.strong} through step "
                 f"{check.steps}", "estimate": check.lowest, "step": check.lowest_step,
                 "n": check.runs, "alpha": None, "verdict": "holds" if check.holds else "fails"})  # fmt: skip
    return rows


def summary_markdown(
    data: StudyData, summary: Sequence[dict[str, Any]], paired_: Sequence[dict[str, Any]]
) -> str:
    lines = [
        "# CPU study of the Shallow Exploration Trap: results",
        "",
        f"Generated by `lie study-report` from the files under the study's outdir (benchmark "
        f"`{data.spec.bench}`). Accuracy is the pipeline's grade (math-verify, as the reward) at a token "
        "budget; strict: the last `\\boxed{}` holds the answer (whole responses). Depth reached: steps "
        "right from the start, up to the first wrong one; looping: `R_red`'s test fires (the config's reward knobs, "
        "every arm alike); trap index: share of prompt groups whose samples all got the same grade.",
        "",
        *registered_markdown(data),
        *(
            []
            if data.spec.third
            else [*verdict_markdown(paired_, continuity=data.spec.tests is not None), ""]
        ),
        gates_markdown(data.spec, data.gates).replace("# Gates", "## Gates", 1),
    ]
    for c in data.spec.conditions:
        lines += [*condition_markdown(data, c, summary, paired_), ""]
    return "\n".join(lines)


def registered_markdown(data: StudyData) -> list[str]:
    if data.spec.third:
        check = third_binding(data)
        return [*decision_markdown(third_rows(data, check=check), check), ""]
    persistence = registered_persistence(data)
    if data.spec.tests is None or persistence is None:
        return []
    rows = registered_rows(registered_effects(data), data.spec.tests, persistence)
    return [*tests_markdown(rows, persistence), ""]


def step_rows(data: StudyData) -> list[dict[str, Any]]:
    rows = []
    for c in data.spec.conditions:
        for arm in c.arms:
            for run in arm.runs:
                escape = escape_step(data.curves[run])
                for point in data.curves[run]:
                    rows.append({"condition": c.name, "arm": arm.name, "run": run, "seed": data.seeds[run],
                                 **point.as_dict(), "escape_step": escape})  # fmt: skip
    return rows


def budget_rows(data: StudyData) -> list[dict[str, Any]]:
    rows = []
    for c in data.spec.conditions:
        for name, keys in [(a.name, a.runs) for a in c.arms] + [("base", c.base_models)]:
            for key in keys:
                for budget, accuracy in sorted(data.evals[(c.name, key)].accuracy.items()):
                    rows.append(
                        {"condition": c.name, "arm": name, "key": key, "budget": budget, "accuracy": accuracy}
                    )
    return rows


def pooled_tests(data: StudyData, others: Sequence[str | Path]) -> list[dict[str, Any]]:
    """The registered tests on this study's pairs and those of the studies under ``others`` (their
    outdirs, each with ``tables/study_paired.csv``): the pooling rule of preregistration-v2."""
    if data.spec.third:
        return pooled_third(data, others)
    if data.spec.tests is None:
        raise LieError("--pool needs a config with study.tests (the second or third registration)")
    tests = data.spec.tests
    machines = [
        registered_effects(data),
        *(read_effects(Path(o) / "tables" / "study_paired.csv") for o in others),
    ]
    # the persistence check of the pool: the same check over every machine's GRPO runs of the strong level
    arm = next(c for c in data.spec.conditions if c.name == tests.strong).arm(data.spec.baseline)
    curves = [{p.step: p.trap_index for p in data.curves[run]} for run in arm.runs]  # type: ignore[union-attr]
    for o in others:
        curves += read_curves(Path(o) / "tables" / "study_steps.csv", tests.strong, data.spec.baseline)
    check = persistence(curves, tests.persistence_steps, tests.persistence_threshold)
    rows = registered_rows(pool(*machines), tests, check)
    rows.append({"test": "persistence", "comparison": f"GRPO's trap index in {tests.strong} through step "
                 f"{check.steps}, all machines' runs", "estimate": check.lowest, "step": check.lowest_step,
                 "n": check.runs, "alpha": None, "verdict": "holds" if check.holds else "fails"})  # fmt: skip
    return [row | {"machines": len(machines)} for row in rows]


def pooled_third(data: StudyData, others: Sequence[str | Path]) -> list[dict[str, Any]]:
    """The third registration on this study's pairs and those of ``others`` (preregistration-v3.md,
    "Pooling"): each machine's pairs added as further pairs, its supervised models counted as separate
    models, the binding check over every machine's GRPO runs."""
    effects = {f"this/{k}": d for k, d in third_effects(data).items()}
    successes = list(third_binding(data).successes)
    for i, o in enumerate(others, start=1):
        for condition, diffs in read_effects(Path(o) / "tables" / "study_paired.csv").items():
            effects.update({f"machine{i}/{condition}/{j}": d for j, d in enumerate(diffs)})
        successes += read_successes(Path(o) / "tables" / "study_steps.csv", data.spec.baseline)
    third = data.spec.third
    assert third is not None
    rows = third_rows(data, effects, binding(successes, third.binding_median))
    return [row | {"machines": 1 + len(others)} for row in rows]


def build_study(config: Config, pool_with: Sequence[str | Path] = ()) -> list[Path]:
    """Read the study's files and write its figures and tables; return their paths. With ``pool_with``
    (other machines' study outdirs), also ``tables/study_tests_pooled.csv``."""
    data = collect(config)
    paths = study_paths(Layout(config))
    for folder in {p.parent for p in paths}:
        folder.mkdir(parents=True, exist_ok=True)
    dynamics, budget, combined, steps_csv, budget_csv, summary_csv, paired_csv, summary_md, tests_csv = paths
    dynamics_figure(data, dynamics)
    budget_figure(data, budget)
    combined_figure(data, combined)
    summary, paired_ = summary_rows(data), paired_rows(data)
    for path, text in (
        (steps_csv, csv_text(step_rows(data))),
        (budget_csv, csv_text(budget_rows(data))),
        (summary_csv, csv_text(summary)),
        (paired_csv, csv_text(paired_)),
        (summary_md, summary_markdown(data, summary, paired_)),
        (tests_csv, csv_text(tests_table(data))),
    ):
        with atomic_output(path) as out:
            out.write(text)
    if pool_with:
        pooled = tests_csv.with_name("study_tests_pooled.csv")
        with atomic_output(pooled) as out:
            out.write(csv_text(pooled_tests(data, pool_with)))
        paths = [*paths, pooled]
    log.info("study report: %s", ", ".join(str(p) for p in paths))
    return paths


__all__ = ["build_study", "summary_rows"]
