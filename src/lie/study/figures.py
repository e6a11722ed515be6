"""The study's figures (matplotlib, no display): one row per condition, one colour per arm."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lie.formats.jsonl import atomic_output
from lie.report.figures import new_figure
from lie.study.data import Band, StudyData, running_mean
from lie.study.spec import Condition

SMOOTH = 5  # steps of the running mean drawn in the dynamics panels
PANELS = (  # (StepPoint field, title, y label)
    ("accuracy", "accuracy (training samples)", "share correct"),
    ("trap_index", "trap index (groups all same grade)", "share of groups"),
    ("zero_adv_share", "zero-advantage groups (own reward)", "share of groups"),
    ("len_applied", "R_len applied", "share of samples"),
    ("response_length", "response length", "tokens (mean)"),
    ("c_context", "C_context (distinct n-grams)", "mean per response"),
    ("r_context", "R_context (distinct / all n-grams)", "mean per response"),
    ("loop_share", "looping responses (R_red's test)", "share of responses"),
)
# Smallest y ranges drawn (low, high): a share that moves by 0.002 must not fill its panel.
MIN_RANGE = {
    "accuracy": (0.0, 0.5),
    "trap_index": (0.0, 1.0),
    "zero_adv_share": (0.0, 1.0),
    "len_applied": (0.0, 0.2),
    "r_context": (0.9, 1.0),
    "loop_share": (0.0, 0.1),
}
COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown")


def _figure(width: float, height: float) -> Any:
    return new_figure(width, height, dpi=100)


def _save(fig: Any, path: Path, **kwargs: Any) -> None:
    """The figure written whole or not at all (a temporary beside it, renamed: ``atomic_output``), so
    that a kill (Ctrl-C, SIGTERM) never leaves a cut-short image under the figure's name."""
    with atomic_output(path, "wb") as handle:
        fig.savefig(handle, format=path.suffix.lstrip(".") or "png", **kwargs)


def _draw_band(ax: Any, b: Band, colour: str, label: str, smooth: int = 1) -> None:
    mean = running_mean(b.mean, smooth)
    low, high = running_mean(b.low, smooth), running_mean(b.high, smooth)
    ax.plot(b.x, mean, color=colour, label=label, linewidth=1.6)
    ax.fill_between(b.x, low, high, color=colour, alpha=0.18, linewidth=0)


def _style(ax: Any, title: str, xlabel: str, ylabel: str) -> None:
    ax.set_title(title, fontsize=8)
    ax.set_xlabel(xlabel, fontsize=7)
    ax.set_ylabel(ylabel, fontsize=7)
    ax.tick_params(labelsize=6)
    ax.grid(alpha=0.3)


def dynamics_panels(data: StudyData, c: Condition, axes: Sequence[Any]) -> None:
    tokens = data.evals[(c.name, c.base_model)].tokens_needed
    for ax, (metric, title, ylabel) in zip(axes, PANELS):
        for i, arm in enumerate(c.arms):
            b = data.arm_band(arm.runs, metric)
            _draw_band(ax, b, COLOURS[i % len(COLOURS)], f"{arm.label} (n={len(arm.runs)})", SMOOTH)
        if metric == "response_length":
            ax.axhline(tokens, color="0.3", linestyle="--", linewidth=1)
        if metric in MIN_RANGE:
            low, high = ax.get_ylim()
            ax.set_ylim(min(low, MIN_RANGE[metric][0]), max(high, MIN_RANGE[metric][1]))
        _style(ax, f"{c.name}: {title}", "training step", ylabel)


def budget_panel(data: StudyData, c: Condition, ax: Any) -> None:
    for i, arm in enumerate(c.arms):
        b = data.budget_band(c.name, arm.runs)
        colour = COLOURS[i % len(COLOURS)]
        ax.plot(b.x, b.mean, color=colour, marker="o", markersize=2.5, label=arm.label, linewidth=1.6)
        ax.fill_between(b.x, b.low, b.high, color=colour, alpha=0.18, linewidth=0)
    base = data.evals[(c.name, c.base_model)]
    xs = sorted(base.accuracy)
    ax.plot(
        xs,
        [base.accuracy[x] for x in xs],
        color="0.4",
        linestyle=":",
        marker=".",
        label="supervised (step 0)",
    )
    ax.axvline(base.tokens_needed, color="0.3", linestyle="--", linewidth=1)
    if data.train_limit:
        ax.axvline(data.train_limit, color="0.6", linestyle="-.", linewidth=1)
    low, high = ax.get_ylim()
    ax.set_ylim(min(low, 0.0), max(high, 0.5))
    _style(ax, f"{c.name}: accuracy vs budget (depth {c.depths[0]}-{c.depths[1]})",
           "budget (tokens); -- full solution, -. training limit", "share correct")  # fmt: skip


def dynamics_figure(data: StudyData, path: Path) -> None:
    rows = data.spec.conditions
    fig = _figure(16, 3.0 * len(rows))
    axes = fig.subplots(len(rows), len(PANELS), squeeze=False)
    for c, row in zip(rows, axes):
        dynamics_panels(data, c, row)
        row[0].legend(fontsize=6, loc="best")
    fig.suptitle(f"training dynamics: mean over seeds (line, {SMOOTH}-step running mean) and min-max (band)")
    _save(fig, path)


def budget_figure(data: StudyData, path: Path) -> None:
    rows = data.spec.conditions
    fig = _figure(5.0 * len(rows), 3.8)
    axes = fig.subplots(1, len(rows), squeeze=False)[0]
    for c, ax in zip(rows, axes):
        budget_panel(data, c, ax)
        ax.legend(fontsize=6, loc="best")
    _save(fig, path)


def combined_figure(data: StudyData, path: Path) -> None:
    rows = data.spec.conditions
    fig = _figure(18, 3.0 * len(rows))
    axes = fig.subplots(len(rows), len(PANELS) + 1, squeeze=False)
    for c, row in zip(rows, axes):
        dynamics_panels(data, c, row[:-1])
        budget_panel(data, c, row[-1])
        row[-1].legend(fontsize=6, loc="best")
    fig.suptitle(
        "Shallow Exploration Trap, CPU study: mean over seeds (line) and min-max (band); "
        f"dynamics drawn as a {SMOOTH}-step running mean",
        fontsize=10,
    )
    _save(fig, path, dpi=72)
