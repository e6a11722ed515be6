"""The study's figures and tables: every arm's seeds aggregated (mean, min, max), from files only.

Outputs under the config's ``outdir`` (:func:`study_paths`):
- ``figures/study_dynamics.png``: accuracy, response length, ``C_context``, ``R_context`` and the
  share of looping responses against the training step, one mean line and a min-max band over
  seeds per arm (a running mean over :data:`SMOOTH` steps, drawn; the CSV keeps raw steps);
- ``figures/study_budget.png``: accuracy against the test-time budget per arm (mean, min-max over
  seeds) with the supervised base model; ``figures/study.png``: both, one figure for the README;
- ``tables/study_steps.csv`` (per run and step), ``tables/study_budget.csv`` (per run and budget),
  ``tables/study_summary.{md,csv}`` (per arm).
"""

from __future__ import annotations

import csv
import io
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lie import config as cfgmod
from lie.errors import LieError
from lie.layout import Layout
from lie.study.inputs import (
    GenerationStats,
    StepPoint,
    budget_accuracy,
    generation_stats,
    needed_tokens,
    run_curve,
)
from lie.study.spec import StudySpec, study_spec

log = logging.getLogger(__name__)

SMOOTH = 5  # steps of the running mean drawn in the dynamics panels
EDGE_STEPS = 5  # "first" and "last" training steps averaged in the summary table
PANELS = (
    ("accuracy", "accuracy (training samples)", "share correct"),
    ("response_length", "response length", "tokens (mean)"),
    ("c_context", "C_context (distinct n-grams)", "mean per response"),
    ("r_context", "R_context (distinct / all n-grams)", "mean per response"),
    ("loop_share", "looping responses (R_red's test fires)", "share of responses"),
)
# Smallest y ranges drawn (low, high): a share that moves by 0.002 must not fill its panel.
MIN_RANGE = {"accuracy": (0.0, 0.5), "r_context": (0.9, 1.0), "loop_share": (0.0, 0.1)}
COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown")


def study_paths(layout: Layout) -> list[Path]:
    figures, tables = layout.figures, layout.tables
    return [
        figures / "study_dynamics.png",
        figures / "study_budget.png",
        figures / "study.png",
        tables / "study_steps.csv",
        tables / "study_budget.csv",
        tables / "study_summary.csv",
        tables / "study_summary.md",
    ]


def study_inputs(config: dict[str, Any], layout: Layout) -> dict[str, list[str]]:
    """Every file :func:`build_study` reads (the ``study`` rule's inputs), by kind."""
    spec = study_spec(config)
    keys = [*spec.runs, spec.base_model]
    return {
        "runs": [str(layout.run_dir(run).final_json) for run in spec.runs],
        "summaries": [str(layout.summary(key)) for key in keys],
        "generations": [str(layout.generations(key, spec.bench)) for key in keys],
        "base": [str(layout.base_model(spec.base_model))],
    }


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
    return Band(
        common,
        [sum(v) / len(v) for v in values],
        [min(v) for v in values],
        [max(v) for v in values],
    )


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
    budgets: dict[str, dict[int, float]]  # run or base model -> budget -> accuracy
    generations: dict[str, GenerationStats]  # run or base model -> statistics of its generations
    needed: dict[str, float] | None
    train_limit: int
    seeds: dict[str, Any]

    def arm_band(self, arm_runs: Sequence[str], metric: str) -> Band:
        return band([{p.step: getattr(p, metric) for p in self.curves[run]} for run in arm_runs])

    def budget_band(self, keys: Sequence[str]) -> Band:
        return band([self.budgets[key] for key in keys])


def collect(config: dict[str, Any]) -> StudyData:
    """Everything the figures and tables need, read from the files of a finished study."""
    spec = study_spec(config)
    layout = Layout(config)
    keys = [*spec.runs, spec.base_model]
    curves = {run: run_curve(config, run) for run in spec.runs}
    budgets = {key: budget_accuracy(config, key, spec.bench) for key in keys}
    gens = {key: generation_stats(config, key, spec.bench) for key in keys}
    base_dir = layout.base_model(spec.base_model)
    if not base_dir.exists():
        raise LieError(f"{base_dir} is missing; build study.base_model {spec.base_model!r} first")
    needed = needed_tokens(config, spec.bench, base_dir)
    limit = int((config.get("training") or {}).get("max_response_length") or 0)
    seeds = {run: cfgmod.run_settings(config, run).get("seed") for run in spec.runs}
    return StudyData(spec, curves, budgets, gens, needed, limit, seeds)


def _figure(width: float, height: float) -> Any:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=100, layout="constrained")


def _draw_band(ax: Any, b: Band, colour: str, label: str, smooth: int = 1) -> None:
    mean = running_mean(b.mean, smooth)
    low, high = running_mean(b.low, smooth), running_mean(b.high, smooth)
    ax.plot(b.x, mean, color=colour, label=label, linewidth=1.8)
    ax.fill_between(b.x, low, high, color=colour, alpha=0.18, linewidth=0)


def _dynamics_panels(data: StudyData, axes: Sequence[Any]) -> None:
    for ax, (metric, title, ylabel) in zip(axes, PANELS):
        for i, arm in enumerate(data.spec.arms):
            b = data.arm_band(arm.runs, metric)
            _draw_band(ax, b, COLOURS[i % len(COLOURS)], f"{arm.label} (n={len(arm.runs)})", SMOOTH)
        if metric == "response_length" and data.needed:
            ax.axhline(data.needed["mean"], color="0.3", linestyle="--", linewidth=1)
            ax.text(
                ax.get_xlim()[0], data.needed["mean"], " full solution (test set)", va="bottom", fontsize=7
            )
        if metric in MIN_RANGE:
            low, high = ax.get_ylim()
            ax.set_ylim(min(low, MIN_RANGE[metric][0]), max(high, MIN_RANGE[metric][1]))
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("training step", fontsize=8)
        ax.set_ylabel(ylabel, fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)


def _budget_panel(data: StudyData, ax: Any) -> None:
    for i, arm in enumerate(data.spec.arms):
        b = data.budget_band(arm.runs)
        colour = COLOURS[i % len(COLOURS)]
        ax.plot(b.x, b.mean, color=colour, marker="o", markersize=3, label=arm.label, linewidth=1.8)
        ax.fill_between(b.x, b.low, b.high, color=colour, alpha=0.18, linewidth=0)
    base = data.budgets[data.spec.base_model]
    xs = sorted(base)
    ax.plot(
        xs, [base[x] for x in xs], color="0.4", linestyle=":", marker=".", label="supervised base (step 0)"
    )
    if data.needed:
        ax.axvline(data.needed["mean"], color="0.3", linestyle="--", linewidth=1)
    if data.train_limit:
        ax.axvline(data.train_limit, color="0.6", linestyle="-.", linewidth=1)
    low, high = ax.get_ylim()
    ax.set_ylim(min(low, 0.0), max(high, 0.5))
    ax.set_title(f"accuracy vs test-time budget ({data.spec.bench})", fontsize=9)
    ax.set_xlabel("budget (tokens); -- full solution, -. training limit", fontsize=8)
    ax.set_ylabel("avg@n", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.grid(alpha=0.3)


def dynamics_figure(data: StudyData, path: Path) -> None:
    fig = _figure(15, 3.2)
    axes = fig.subplots(1, len(PANELS))
    _dynamics_panels(data, axes)
    axes[0].legend(fontsize=7, loc="best")
    fig.suptitle(f"training dynamics: mean over seeds (line, {SMOOTH}-step running mean) and min-max (band)")
    fig.savefig(path)


def budget_figure(data: StudyData, path: Path) -> None:
    fig = _figure(5.5, 4)
    ax = fig.subplots()
    _budget_panel(data, ax)
    ax.legend(fontsize=7, loc="best")
    fig.savefig(path)


def combined_figure(data: StudyData, path: Path) -> None:
    fig = _figure(12, 6.6)
    axes = fig.subplots(2, 3).ravel()
    _dynamics_panels(data, axes[:5])
    _budget_panel(data, axes[5])
    axes[5].legend(fontsize=7, loc="best")  # one legend: every arm and the base model
    fig.suptitle(
        "Shallow Exploration Trap, CPU study: mean over seeds (line) and min-max (band); "
        f"dynamics drawn as a {SMOOTH}-step running mean",
        fontsize=10,
    )
    fig.savefig(path, dpi=72)


def step_rows(data: StudyData) -> list[dict[str, Any]]:
    rows = []
    for arm in data.spec.arms:
        for run in arm.runs:
            for point in data.curves[run]:
                rows.append({"arm": arm.name, "run": run, "seed": data.seeds[run], **point.as_dict()})
    return rows


def budget_rows(data: StudyData) -> list[dict[str, Any]]:
    rows = []
    groups = [(arm.name, arm.runs) for arm in data.spec.arms] + [("base", (data.spec.base_model,))]
    for name, keys in groups:
        for key in keys:
            for budget, accuracy in sorted(data.budgets[key].items()):
                rows.append({"arm": name, "key": key, "budget": budget, "accuracy": accuracy})
    return rows


def _edge(points: Sequence[StepPoint], metric: str, last: bool) -> float:
    chosen = points[-EDGE_STEPS:] if last else points[:EDGE_STEPS]
    return sum(getattr(p, metric) for p in chosen) / len(chosen)


SUMMARY_COLUMNS = (
    ("acc_train_limit", "accuracy @ training limit"),
    ("acc_max_budget", "accuracy @ largest budget"),
    ("acc_boxed", "strict boxed accuracy"),
    ("eval_length", "eval length (tokens)"),
    ("eval_c_context", "eval C_context"),
    ("eval_r_context", "eval R_context"),
    ("eval_loop_share", "eval looping share"),
    ("train_acc_first", f"train accuracy, first {EDGE_STEPS} steps"),
    ("train_acc_last", f"train accuracy, last {EDGE_STEPS} steps"),
    ("train_length_first", f"train length, first {EDGE_STEPS} steps"),
    ("train_length_last", f"train length, last {EDGE_STEPS} steps"),
    ("train_loop_last", f"train looping share, last {EDGE_STEPS} steps"),
)


def _key_summary(data: StudyData, key: str) -> dict[str, float | None]:
    budgets = data.budgets[key]
    limit = data.train_limit if data.train_limit in budgets else None
    gen = data.generations[key]
    out: dict[str, float | None] = {
        "acc_train_limit": budgets[limit] if limit is not None else None,
        "acc_max_budget": budgets[max(budgets)],
        "acc_boxed": gen.accuracy_boxed,
        "eval_length": gen.response_length,
        "eval_c_context": gen.c_context,
        "eval_r_context": gen.r_context,
        "eval_loop_share": gen.loop_share,
    }
    points = data.curves.get(key)
    for name, metric, last in (
        ("train_acc_first", "accuracy", False),
        ("train_acc_last", "accuracy", True),
        ("train_length_first", "response_length", False),
        ("train_length_last", "response_length", True),
        ("train_loop_last", "loop_share", True),
    ):
        out[name] = _edge(points, metric, last) if points else None
    return out


def summary_rows(data: StudyData) -> list[dict[str, Any]]:
    """Per arm: mean, min and max over seeds of every summary column; the base model as one row."""
    rows = []
    base = _key_summary(data, data.spec.base_model)
    rows.append({"arm": "base", "label": "supervised base (step 0)", "seeds": 1}
                | {f"{c}_{s}": base[c] for c, _ in SUMMARY_COLUMNS for s in ("mean", "min", "max")})  # fmt: skip
    for arm in data.spec.arms:
        per_run = [_key_summary(data, run) for run in arm.runs]
        row: dict[str, Any] = {"arm": arm.name, "label": arm.label, "seeds": len(arm.runs)}
        for column, _ in SUMMARY_COLUMNS:
            values = [r[column] for r in per_run if r[column] is not None]
            row[f"{column}_mean"] = sum(values) / len(values) if values else None
            row[f"{column}_min"] = min(values) if values else None
            row[f"{column}_max"] = max(values) if values else None
        rows.append(row)
    return rows


def _cell(row: dict[str, Any], column: str, seeds: int) -> str:
    mean = row[f"{column}_mean"]
    if mean is None:
        return "—"
    digits = 1 if "length" in column or "c_context" in column else 2
    if seeds == 1:
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} [{row[f'{column}_min']:.{digits}f}, {row[f'{column}_max']:.{digits}f}]"


def summary_markdown(data: StudyData, rows: list[dict[str, Any]]) -> str:
    head = ["arm", "seeds", *(title for _, title in SUMMARY_COLUMNS)]
    lines = [
        "# CPU study of the Shallow Exploration Trap: summary",
        "",
        f"Generated by `lie study-report` from the files under the study's outdir. Benchmark "
        f"`{data.spec.bench}`; cells are the mean over seeds and [min, max]. Budgets are tokens; the "
        f"training limit is {data.train_limit} tokens. Accuracy is the pipeline's grade (math-verify, "
        "which also takes an unboxed last number); the strict column needs the last `\\boxed{}` to "
        "hold the answer (whole responses). Looping = `R_red`'s test fires (reward knobs of the config).",
        "",
    ]
    if data.needed:
        lines += [
            f"A full solution of a test problem takes {data.needed['mean']:.1f} tokens on average "
            f"({data.needed['min']:.0f} to {data.needed['max']:.0f}).",
            "",
        ]
    lines += [
        "| " + " | ".join(head) + " |",
        "|" + "|".join([":---", "---:"] + ["---:"] * len(SUMMARY_COLUMNS)) + "|",
    ]
    for row in rows:
        cells = [row["label"], str(row["seeds"]), *(_cell(row, c, row["seeds"]) for c, _ in SUMMARY_COLUMNS)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def csv_text(rows: Sequence[dict[str, Any]]) -> str:
    if not rows:
        return ""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: ("" if v is None else v) for k, v in row.items()})
    return out.getvalue()


def build_study(config: dict[str, Any]) -> list[Path]:
    """Read the study's files and write its figures and tables; return their paths."""
    from lie.jsonl import atomic_output

    data = collect(config)
    layout = Layout(config)
    paths = study_paths(layout)
    for folder in {p.parent for p in paths}:
        folder.mkdir(parents=True, exist_ok=True)
    dynamics, budget, combined, steps_csv, budget_csv, summary_csv, summary_md = paths
    dynamics_figure(data, dynamics)
    budget_figure(data, budget)
    combined_figure(data, combined)
    summary = summary_rows(data)
    for path, text in (
        (steps_csv, csv_text(step_rows(data))),
        (budget_csv, csv_text(budget_rows(data))),
        (summary_csv, csv_text(summary)),
        (summary_md, summary_markdown(data, summary)),
    ):
        with atomic_output(path) as out:
            out.write(text)
    log.info("study report: %s", ", ".join(str(p) for p in paths))
    return paths


__all__ = ["build_study", "study_inputs", "study_paths", "collect", "band", "running_mean", "summary_rows"]
