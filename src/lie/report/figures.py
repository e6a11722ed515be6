"""The report's figures (matplotlib, Agg; no pyplot state): test-time scaling and training dynamics.

Colours are fixed per key across figures (runs in ``selected_runs`` order, base models in grey)
so that one run is one colour everywhere. A value that is missing is a gap in its line.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lie.report.inputs import ReportData
from lie.report.paper import DOMAINS
from lie.report.tables import main_reader, result_columns

SHARES = {"accuracy", "r_context", "red_flagged", "len_flagged", "group_distinct", "group_overlap"}
PANELS = (  # (StepStats field, title, y label)
    ("response_length", "response length", "tokens (mean)"),
    ("accuracy", "accuracy", "share correct"),
    ("c_context", "C_context (distinct n-grams)", "mean per response"),
    ("r_context", "R_context (distinct / all n-grams)", "mean per response"),
    ("red_flagged", "share flagged by R_red's test", "share of responses"),
    ("len_flagged", "wrong answers below R_len's target", "share of wrong answers"),
    ("entropy", "policy entropy (actor/entropy)", "nats"),
    ("group_distinct", "group diversity: distinct n-grams", "distinct / all, per group"),
    ("group_overlap", "group overlap (pairwise Jaccard)", "mean over pairs"),
)


def new_figure(width: float, height: float, dpi: int = 110) -> Any:
    """A matplotlib figure without pyplot's global state (safe in any process)."""
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=dpi, layout="constrained")


def colours(data: ReportData) -> dict[str, Any]:
    from matplotlib import colormaps

    palette = colormaps["tab10"].colors + colormaps["Dark2"].colors  # type: ignore[attr-defined]  # ListedColormap
    out: dict[str, Any] = {run: palette[i % len(palette)] for i, run in enumerate(data.runs)}
    greys = ["0.25", "0.5", "0.65"]
    for i, key in enumerate(k for k in data.keys if k not in out):
        out[key] = greys[i % len(greys)]
    return out


MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


def line_styles(data: ReportData) -> dict[str, dict[str, Any]]:
    """Colour, marker and width per key: earlier keys drawn wider, so identical curves stay visible."""
    colour = colours(data)
    count = max(len(data.keys) - 1, 1)
    return {
        key: {
            "color": colour[key],
            "marker": MARKERS[i % len(MARKERS)],
            "linewidth": 2.8 - 1.6 * i / count,
            "markersize": 5.5 - 2.5 * i / count,
        }
        for i, key in enumerate(data.keys)
    }


def legend_name(data: ReportData, key: str) -> str:
    """A line's name in a legend: the paper's label (GSPO+LIE, ...) with the key, else the key."""
    label = data.label(key)
    return f"{label} ({key})" if label else key


def _nan(values: Sequence[float | None]) -> list[float]:
    return [math.nan if v is None else float(v) for v in values]


def _min_span(ax: Any, span: float, floor: float | None = None) -> None:
    """Widen a y range narrower than ``span`` around its middle, so flat lines do not fill the panel."""
    low, high = ax.get_ylim()
    if high - low < span:
        middle = (low + high) / 2
        low, high = middle - span / 2, middle + span / 2
        if floor is not None and low < floor:  # a line on the floor stays above the axis, seen
            low, high = floor - 0.04 * span, floor + 0.96 * span
        ax.set_ylim(low, high)


def _budget_label(budget: int) -> str:
    return f"{budget // 1024}k" if budget >= 1024 and budget % 1024 == 0 else str(budget)


def tts_figure(data: ReportData, path: Path) -> None:
    """Domain averages against the token budget, one line per key; the paper's curves dashed."""
    budgets = sorted({int(b) for s in data.summaries.values() for b in s["budgets"]})
    curves = data.paper.tts_curves()
    paper_budgets = sorted({b for _, bs, _ in curves.values() for b in bs})
    show_paper = max(budgets) >= min(paper_budgets)
    entries = len(data.keys) + (len(curves) if show_paper else 0)
    ncol = 3 if entries > 8 else 2
    fig = new_figure(11, 4.2 + 0.2 * math.ceil(entries / ncol))  # the legend goes below the panels
    axes = fig.subplots(1, 2)
    colour = colours(data)
    styles = line_styles(data)
    for ax, domain in zip(axes, DOMAINS):
        for key in data.keys:
            entry = data.summaries[key][domain]["budgets"]
            xs = [int(b) for b in data.summaries[key]["budgets"]]
            full = [entry[str(b)]["avg"] for b in xs]
            style = dict(styles[key])
            if key not in data.runs:
                style["linestyle"] = "-."
            if all(v is not None for v in full):
                ax.plot(xs, [100 * v for v in full], label=legend_name(data, key), **style)
            else:
                partial = _nan([entry[str(b)].get("mean_of_present") for b in xs])
                missing = len(data.summaries[key][domain].get("missing") or [])
                style["linestyle"] = ":"
                ax.plot(xs, [100 * v for v in partial], label=f"{legend_name(data, key)} (partial: {missing} missing)",
                        **style)  # fmt: skip
        if domain == data.paper.data["tts"]["bench"]:
            for key, (label, xs, ys) in curves.items():
                if show_paper:
                    ax.plot(xs, [100 * y for y in ys], linestyle="--", linewidth=1.2, marker="x", markersize=4,
                            color=colour.get(key, "0.4"), alpha=0.8, label=label)  # fmt: skip
            if not show_paper:  # under the axis, where no marker is
                ax.annotate("paper's curves (4k-32k tokens) lie beyond these budgets", (0.0, -0.2),
                            xycoords="axes fraction", fontsize=8, color="0.35", va="top")  # fmt: skip
        ax.set_xscale("log", base=2)
        ticks = sorted(set(budgets) | (set(paper_budgets) if show_paper and domain == "in_domain" else set()))
        ax.set_xticks(ticks, [_budget_label(b) for b in ticks])
        ax.minorticks_off()
        ax.set_xlabel("token budget (generations cut at)")
        ax.set_ylabel("accuracy (%)")
        benches = data.summaries[data.keys[0]][domain].get("benchmarks") or []
        ax.set_title(f"{'in-domain' if domain == 'in_domain' else 'out-of-domain'} average: {', '.join(benches)}",
                     fontsize=9)  # fmt: skip
        ax.grid(alpha=0.3)
        _min_span(ax, 5.0, floor=0.0)
    legend: dict[str, Any] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            legend.setdefault(label, handle)
    fig.legend(list(legend.values()), list(legend), loc="outside lower center", ncol=ncol, fontsize=7)

    reader = main_reader(data)
    fig.suptitle("Test-time scaling: accuracy against the token budget" + (f" ({reader})" if reader else ""),
                 fontsize=11)  # fmt: skip
    fig.savefig(path)


def _paper_c_context(data: ReportData, ax: Any, colour: dict[str, Any]) -> str:
    """The paper's late-training C_context: dotted lines on our scale, else a title note (tiny runs)."""
    known = {run: data.paper.c_context(run) for run in data.runs}
    references = {run: ref for run, ref in known.items() if ref is not None}
    if not references:
        return ""
    ours = [v for run in data.runs for v in data.dynamics[run].series("c_context")[1] if v is not None]
    if ours and max(ours) >= 0.1 * min(references.values()):
        for run, ref in references.items():
            ax.axhline(ref, color=colour[run], linestyle=":", linewidth=1)
            ax.annotate(f"paper ~{ref:.0f}", (0.01, ref), xycoords=("axes fraction", "data"),
                        fontsize=7, color=colour[run], va="bottom")  # fmt: skip
        return ""
    text = ", ".join(f"{data.paper.label(run) or run} ~{ref:.0f}" for run, ref in references.items())
    return f"\npaper, late in training: {text} (off this scale)"


def step_offset(data: ReportData, run: str) -> int:
    """Where a run's step 1 sits on the shared axis: a continual stage continues after its parent."""
    spec = data.config.experiments.get(run)
    parent = spec.parent if spec is not None else None
    if parent is None or parent not in data.dynamics or not data.dynamics[parent].steps:
        return 0
    return step_offset(data, parent) + data.dynamics[parent].steps[-1].step


def dynamics_figure(data: ReportData, path: Path) -> None:
    """A grid of per-step curves, one line per run (``lie.analysis.dynamics`` defines each)."""
    from matplotlib.ticker import MaxNLocator

    fig = new_figure(13, 10)
    axes = fig.subplots(3, 3, sharex=True).ravel()
    colour = colours(data)
    styles = line_styles(data)
    for ax, (name, title, ylabel) in zip(axes, PANELS):
        for run in data.runs:
            dyn = data.dynamics[run]
            steps, values = dyn.series(name)
            steps = [s + step_offset(data, run) for s in steps]
            style = dict(styles[run])
            if len(steps) > 40:
                style["marker"] = None
            ax.plot(steps, _nan(values), label=legend_name(data, run), **style)
        if name == "c_context":
            title += _paper_c_context(data, ax, colour)
        if name in SHARES:
            ax.set_ylim(-0.03, 1.03)
        else:
            _min_span(ax, 1e-3 if name == "entropy" else 1.0)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_title(title, fontsize=9)
        ax.set_ylabel(ylabel, fontsize=8)
        ax.grid(alpha=0.3)
        ax.tick_params(labelsize=8)
    for ax in axes[-3:]:
        ax.set_xlabel("training step (a continual stage continues its parent's)")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=min(len(labels), 4), fontsize=8)
    fig.suptitle(
        f"Training dynamics from the rollouts ({data.n}-gram states; flagged = the reward's test, applied or not)",
        fontsize=11,
    )
    fig.savefig(path)


def lengths_figure(data: ReportData, rows: Sequence[dict[str, Any]], path: Path) -> None:
    """Mean response length at evaluation: one panel per benchmark, one bar per key (figure of lengths.md)."""
    benches = [c for c in result_columns(data) if c not in DOMAINS]  # the paper's order
    value = {(r["key"], r["bench"]): r.get("mean_tokens") for r in rows if r.get("budget") == data.budget}
    cols = min(3, len(benches))
    nrows = math.ceil(len(benches) / cols)
    fig = new_figure(4.2 * cols, 0.6 + max(1.6, 0.28 * len(data.keys)) * nrows)
    axes = fig.subplots(nrows, cols, squeeze=False).ravel()
    colour = colours(data)
    positions = list(range(len(data.keys)))[::-1]
    for ax, bench in zip(axes, benches):
        values = [value.get((key, bench)) for key in data.keys]
        ax.barh(positions, _nan(values), color=[colour[k] for k in data.keys])
        names = [legend_name(data, key) for key in data.keys]
        ax.set_yticks(positions, names if ax in axes[::cols] else [""] * len(positions), fontsize=7)
        ax.set_title(data.paper.title(bench), fontsize=9)
        ax.set_xlabel("tokens (mean)", fontsize=8)
        ax.tick_params(axis="x", labelsize=7)
        ax.grid(axis="x", alpha=0.3)
    for ax in axes[len(benches) :]:
        ax.set_visible(False)
    fig.suptitle(f"Mean response length at evaluation ({data.budget}-token budget)", fontsize=11)
    fig.savefig(path)
