"""The report's tables: main (beside the paper), test-time scaling, behaviours, diversity, dynamics.

Each table is built once as long rows (the CSV, machine-readable, full precision, metric names
with their parameters) and, for Markdown/LaTeX, as a :class:`lie.report.render.Table` with
rounded cells. Gaps: a benchmark missing from a summary, or a domain average with a missing
benchmark, is ``—`` in Markdown, ``--`` in LaTeX, empty in CSV, with the reason in a note.
"""

from __future__ import annotations

from typing import Any

from lie.analysis.behaviours import Tally
from lie.analysis.dynamics import FIELDS, phase_mean
from lie.errors import LieError
from lie.report.inputs import ReportData
from lie.report.paper import DOMAINS
from lie.report.render import MISSING, Group, Table, fmt

DOMAIN_TITLES = {"in_domain": "ID avg", "out_of_domain": "OOD avg"}
DOMAIN_METRIC = "avg@n (mean over benchmarks)"  # lie evaluate's name for the domain averages
MAIN_COLUMNS = ("key", "label", "bench", "metric", "budget", "ours_pct", "paper_pct", "diff_pct", "note")
TTS_COLUMNS = ("key", "label", "bench", "metric", "budget", "accuracy", "paper", "diff", "note")
BEHAVIOUR_COLUMNS = ("key", "bench", "responses", "behaviour", "count", "responses_with", "per_100", "paper", "note")  # fmt: skip
DIVERSITY_COLUMNS = ("key", "source", "bench", "phase", "metric", "value", "count", "note")


def _pct(value: float | None) -> float | None:
    return None if value is None else 100.0 * float(value)


def _domain_entry(data: ReportData, key: str, domain: str) -> dict[str, Any]:
    summary = data.summaries[key]
    path = data.layout.summary(key)
    expected = list((data.config.get("evaluation") or {}).get(domain) or [])
    entry = summary.get(domain)
    if not isinstance(entry, dict):
        raise LieError(f"{path}: no '{domain}' average; rerun `lie evaluate` for {key}")
    if list(entry.get("benchmarks") or []) != expected:
        raise LieError(
            f"{path}: its {domain} average is over {entry.get('benchmarks')}, the config's "
            f"evaluation.{domain} is {expected}; rerun `lie evaluate` for {key}"
        )
    return entry


# ---------------------------------------------------------------- main
def main_rows(data: ReportData) -> list[dict[str, Any]]:
    """One row per (key, benchmark or domain average): ours, the paper's, the difference (percent)."""
    rows = []
    budget = str(data.budget)
    for key in data.keys:
        summary = data.summaries[key]
        label = data.label(key)
        for bench in data.benchmarks:
            entry = summary["benchmarks"].get(bench)
            ours, metric, note = None, "avg@n", ""
            if entry is None:
                note = f"not in {data.layout.summary(key)}"
            else:
                metric = entry["avg@n"]
                ours = _pct(entry["budgets"][budget][metric])
            paper = data.paper.main_value(key, bench)
            diff = ours - paper if ours is not None and paper is not None else None
            rows.append(dict(key=key, label=label, bench=bench, metric=metric, budget=data.budget,
                             ours_pct=ours, paper_pct=paper, diff_pct=diff, note=note))  # fmt: skip
        for domain in DOMAINS:
            entry = _domain_entry(data, key, domain)
            ours = _pct(entry["budgets"][budget]["avg"])
            notes = []
            if entry.get("missing"):
                notes.append(f"missing: {' '.join(entry['missing'])}")
            paper = data.paper.main_value(key, domain)
            if paper is not None and not data.paper.comparable_domain(domain, entry["benchmarks"]):
                notes.append("paper's average is over other benchmarks")
                paper = None
            diff = ours - paper if ours is not None and paper is not None else None
            rows.append(dict(key=key, label=label, bench=domain, metric=DOMAIN_METRIC, budget=data.budget,
                             ours_pct=ours, paper_pct=paper, diff_pct=diff, note="; ".join(notes)))  # fmt: skip
    return rows


def main_table(data: ReportData, rows: list[dict[str, Any]]) -> Table:
    """Rows: keys; columns: benchmarks then ID/OOD averages, each with paper and Δ where the paper has one."""
    columns = [*data.benchmarks, *DOMAINS]
    cell = {(r["key"], r["bench"]): r for r in rows}
    with_paper = {c for c in columns if any(cell[(k, c)]["paper_pct"] is not None for k in data.keys)}
    labelled = any(data.label(k) for k in data.keys)
    groups = [Group("model", [""], "l")] + ([Group("paper row", [""], "l")] if labelled else [])
    for c in columns:
        title = DOMAIN_TITLES.get(c, c)
        groups.append(Group(title, ["ours", "paper", "Δ"] if c in with_paper else [""]))
    table = Table(groups)
    grouped: dict[tuple[str, str], list[str]] = {}  # (column, note) -> keys
    for key in data.keys:
        cells = [key] + ([data.label(key) or MISSING] if labelled else [])
        for c in columns:
            r = cell[(key, c)]
            ours = None if r["ours_pct"] is None else round(r["ours_pct"], 1)
            cells.append(fmt(ours))
            if c in with_paper:
                paper = r["paper_pct"]
                cells.append(fmt(paper))
                cells.append(
                    fmt(round(ours - paper, 1) if ours is not None and paper is not None else None, sign=True)
                )
            for note in filter(None, r["note"].split("; ")):
                grouped.setdefault((DOMAIN_TITLES.get(c, c), note), []).append(key)
        table.add(cells)
    sizes = []
    for bench in data.benchmarks:
        ns = sorted(
            {s["benchmarks"][bench]["n"] for s in data.summaries.values() if bench in s["benchmarks"]}
        )
        sizes.append(f"{bench} {'/'.join(map(str, ns)) or '?'}")
    evaluation = data.config.get("evaluation") or {}
    table.caption = (
        f"Accuracy (%) at {data.budget} tokens: avg@n, the mean over problems of the share of a problem's "
        f"n samples graded correct (n: {', '.join(sizes)}). ID avg: mean over "
        f"{', '.join(evaluation.get('in_domain') or [])}; OOD avg: mean over "
        f"{', '.join(evaluation.get('out_of_domain') or [])}. paper: the paper's number "
        f"(src/lie/report/paper_numbers.yaml, at {data.paper.budget} tokens); Δ = ours − paper. "
        f"{MISSING}: not available (notes below)."
    )
    notes = [f"{column}: {note} ({', '.join(keys)})" for (column, note), keys in grouped.items()]
    if data.budget != data.paper.budget and with_paper:
        notes.insert(0, f"our largest budget is {data.budget} tokens, the paper's {data.paper.budget}")
    table.notes = notes
    return table


# ---------------------------------------------------------------- test-time scaling
def tts_rows(data: ReportData) -> list[dict[str, Any]]:
    """Accuracy (fraction) per key, benchmark or domain average, and budget, with the paper's curve."""
    rows = []
    for key in data.keys:
        summary = data.summaries[key]
        budgets = [int(b) for b in summary["budgets"]]
        label = data.label(key)
        for bench in data.benchmarks:
            entry = summary["benchmarks"].get(bench)
            if entry is None:
                rows.append(dict(key=key, label=label, bench=bench, metric="avg@n", budget=None,
                                 note=f"not in {data.layout.summary(key)}"))  # fmt: skip
                continue
            for budget in budgets:
                value = entry["budgets"][str(budget)][entry["avg@n"]]
                rows.append(dict(key=key, label=label, bench=bench, metric=entry["avg@n"], budget=budget,
                                 accuracy=value, note=""))  # fmt: skip
        for domain in DOMAINS:
            entry = _domain_entry(data, key, domain)
            note = f"missing: {' '.join(entry['missing'])}" if entry.get("missing") else ""
            for budget in budgets:
                value = entry["budgets"][str(budget)]["avg"]
                paper = data.paper.tts_value(key, domain, budget)
                diff = value - paper if value is not None and paper is not None else None
                rows.append(dict(key=key, label=label, bench=domain, metric=DOMAIN_METRIC, budget=budget,
                                 accuracy=value, paper=paper, diff=diff, note=note))  # fmt: skip
    return rows


# ---------------------------------------------------------------- behaviours
def _total(data: ReportData, key: str) -> Tally:
    total = Tally(data.classifier.names)
    for tally in data.evals[key].behaviours.values():
        total.merge(tally)
    return total


def behaviour_rows(data: ReportData) -> list[dict[str, Any]]:
    rows = []
    for key in data.keys:
        analysis = data.evals[key]
        parts = [("all", _total(data, key))] + list(analysis.behaviours.items())
        note = f"no generations: {' '.join(analysis.missing)}" if analysis.missing else ""
        for bench, tally in parts:
            for name in data.classifier.names:
                rows.append(dict(key=key, bench=bench, responses=tally.responses, behaviour=name,
                                 count=tally.counts[name], responses_with=tally.with_behaviour[name],
                                 per_100=tally.per_100(name),
                                 paper=data.paper.behaviour_count(key, name) if bench == "all" else None,
                                 note=note if bench == "all" else ""))  # fmt: skip
    return rows


def behaviour_table(data: ReportData) -> Table:
    names = data.classifier.names
    with_paper = [n for n in names if any(data.paper.behaviour_count(k, n) is not None for k in data.keys)]
    groups = [Group("model", [""], "l"), Group("responses", [""])]
    groups += [Group(n, [""]) for n in names] + [Group(f"{n} (paper)", [""]) for n in with_paper]
    table = Table(groups)
    for key in data.keys:
        total = _total(data, key)
        cells = [key, str(total.responses)]
        for name in names:
            per = total.per_100(name)
            cells.append(f"{total.counts[name]} ({per:.1f})" if per is not None else MISSING)
        cells += [fmt(data.paper.behaviour_count(key, n), 0) for n in with_paper]
        table.add(cells)
        if data.evals[key].missing:
            table.notes.append(f"{key}: no generations for {', '.join(data.evals[key].missing)}")
    table.caption = (
        "Reasoning behaviours on the evaluation generations (all benchmarks): sentences that show each "
        "behaviour, counted by the patterns of src/lie/analysis/behaviours.yaml, and (in brackets) per 100 "
        "responses. The paper gives raw counts on an unstated set: compare directions, not levels. "
        "Per-benchmark counts: behaviours.csv."
    )
    return table


# ---------------------------------------------------------------- diversity
def diversity_rows(data: ReportData) -> list[dict[str, Any]]:
    rows = []
    distinct, overlap = f"group_distinct:n={data.n}", f"group_overlap:n={data.n}"
    for key in data.keys:
        dyn = data.dynamics.get(key)
        if dyn is not None:
            note = "; ".join(dyn.notes)
            for phase in ("first", "last"):
                for metric, name in ((distinct, "group_distinct"), (overlap, "group_overlap"),
                                     ("actor/entropy", "entropy"), (f"r_context:n={data.n}", "r_context")):  # fmt: skip
                    rows.append(dict(key=key, source="train", bench="rollouts", phase=phase, metric=metric,
                                     value=phase_mean(dyn, name, phase), count=len(dyn.steps), note=note))  # fmt: skip
        for bench, entry in data.evals[key].diversity.items():
            for metric, name in ((distinct, "distinct"), (overlap, "overlap")):
                rows.append(dict(key=key, source="eval", bench=bench, phase="all", metric=metric,
                                 value=entry[name], count=entry["problems"], note=f"n={entry['n']}"))  # fmt: skip
    return rows


def _arrow(first: float | None, last: float | None, digits: int = 3) -> str:
    if first is None and last is None:
        return MISSING
    return f"{fmt(first, digits)} → {fmt(last, digits)}"


def diversity_table(data: ReportData) -> Table:
    benches = [b for b in data.benchmarks if any(b in data.evals[k].diversity for k in data.keys)]
    groups = [Group("model", [""], "l")]
    groups += [Group("train: distinct", [""]), Group("train: overlap", [""]), Group("train: entropy", [""])]
    for bench in benches:
        groups.append(Group(bench, ["distinct", "overlap"]))
    table = Table(groups)
    for key in data.keys:
        dyn = data.dynamics.get(key)
        cells = [key]
        for name in ("group_distinct", "group_overlap", "entropy"):
            cells.append(
                _arrow(phase_mean(dyn, name, "first"), phase_mean(dyn, name, "last")) if dyn else MISSING
            )
        for bench in benches:
            entry = data.evals[key].diversity.get(bench)
            cells += [fmt(entry["distinct"], 3), fmt(entry["overlap"], 3)] if entry else [MISSING, MISSING]
        table.add(cells)
        if dyn and dyn.notes:
            table.notes.append(f"{key}: {'; '.join(dyn.notes)}")
    table.caption = (
        f"Diversity across a prompt's samples, on {data.n}-gram states (the reward's). distinct: distinct "
        "n-grams across the group / all its n-grams (higher: more diverse); overlap: mean pairwise Jaccard "
        "index of the samples' n-gram sets (lower: more diverse). train: rollouts, mean over the first → "
        "last tenth of the steps read, with the policy entropy (actor/entropy); benchmarks: evaluation "
        f"generations of benchmarks with several samples a problem, mean over problems. {MISSING}: no "
        "training (base models) or no n-gram window."
    )
    return table


def dynamics_rows(data: ReportData) -> list[dict[str, Any]]:
    return [row for run in data.runs for row in data.dynamics[run].rows()]


DYNAMICS_COLUMNS = ("run", *FIELDS)
