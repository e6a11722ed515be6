"""The report's tables: results beside the paper (one per group of :mod:`lie.report.groups`, in the
paper's column order, with the config's footnotes), evaluation lengths, sensitivity, test-time
scaling, behaviours, diversity, dynamics.

Each table is built once as long rows (the CSV, machine-readable, full precision, metric names
with their parameters) and, for Markdown/LaTeX, as a :class:`lie.report.render.Table` with
rounded cells. Gaps: a benchmark missing from a summary, or a domain average with a missing
benchmark, is ``—`` in Markdown, ``--`` in LaTeX, empty in CSV, with the reason in a note.
"""

from __future__ import annotations

from typing import Any

from lie.analysis.behaviours import Tally
from lie.analysis.dynamics import FIELDS, phase_mean
from lie.core.errors import LieError
from lie.report.inputs import ReportData
from lie.report.notes import markers, table_notes
from lie.report.paper import DOMAINS
from lie.report.render import MISSING, Group, Table, fmt

DOMAIN_TITLES = {"in_domain": "ID avg", "out_of_domain": "OOD avg"}
DOMAIN_METRIC = "avg@n (mean over benchmarks)"  # lie evaluate's name for the domain averages
RESULT_COLUMNS = (
    "table",
    "key",
    "label",
    "bench",
    "metric",
    "budget",
    "ours_pct",
    "paper_pct",
    "diff_pct",
    "note",
)
LENGTH_COLUMNS = ("key", "label", "bench", "budget", "mean_tokens", "samples", "note")
SENSITIVITY_COLUMNS = ("key", "theta", "n", "e", "in_domain", "out_of_domain", "mean_tokens_in_domain")
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


# ---------------------------------------------------------------- result tables (main, families, ...)
def result_columns(data: ReportData) -> list[str]:
    """The paper's column order: in-domain benchmarks, ID avg, out-of-domain ones, OOD avg, the rest."""
    evaluation = data.config.get("evaluation") or {}
    in_domain = [b for b in evaluation.get("in_domain") or [] if b in data.benchmarks]
    out_domain = [b for b in evaluation.get("out_of_domain") or [] if b in data.benchmarks]
    rest = [b for b in data.benchmarks if b not in in_domain and b not in out_domain]
    return [*in_domain, "in_domain", *out_domain, "out_of_domain", *rest]


def result_rows(data: ReportData, keys: list[str], table: str = "main") -> list[dict[str, Any]]:
    """One row per (key, benchmark or domain average): ours, the paper's, the difference (percent)."""
    rows = []
    budget = str(data.budget)
    for key in keys:
        summary = data.summaries[key]
        label = data.label(key)
        for column in result_columns(data):
            if column in DOMAINS:
                rows.append(_domain_row(data, key, column, table))
                continue
            entry = summary["benchmarks"].get(column)
            ours, metric, note = None, "avg@n", ""
            if entry is None:
                note = f"not in {data.layout.summary(key)}"
            else:
                metric = entry["avg@n"]
                ours = _pct(entry["budgets"][budget][metric])
            paper = data.paper.main_value(key, column)
            diff = ours - paper if ours is not None and paper is not None else None
            rows.append(dict(table=table, key=key, label=label, bench=column, metric=metric, budget=data.budget,
                             ours_pct=ours, paper_pct=paper, diff_pct=diff, note=note))  # fmt: skip
    return rows


def _domain_row(data: ReportData, key: str, domain: str, table: str) -> dict[str, Any]:
    entry = _domain_entry(data, key, domain)
    ours = _pct(entry["budgets"][str(data.budget)]["avg"])
    notes = []
    if entry.get("missing"):
        notes.append(f"missing: {' '.join(entry['missing'])}")
    paper = data.paper.main_value(key, domain)
    if paper is not None and not data.paper.comparable_domain(domain, entry["benchmarks"]):
        notes.append("paper's average is over other benchmarks")
        paper = None
    diff = ours - paper if ours is not None and paper is not None else None
    return dict(table=table, key=key, label=data.label(key), bench=domain, metric=DOMAIN_METRIC,
                budget=data.budget, ours_pct=ours, paper_pct=paper, diff_pct=diff, note="; ".join(notes))  # fmt: skip


def _title(data: ReportData, column: str) -> str:
    return DOMAIN_TITLES.get(column) or data.paper.title(column)


def result_table(data: ReportData, keys: list[str], rows: list[dict[str, Any]]) -> Table:
    """Rows: keys; columns as the paper's (:func:`result_columns`), each with paper and Δ where it has one."""
    columns = result_columns(data)
    cell = {(r["key"], r["bench"]): r for r in rows}
    with_paper = {c for c in columns if any(cell[(k, c)]["paper_pct"] is not None for k in keys)}
    labelled = any(data.label(k) for k in keys)
    marks, footnotes = markers(table_notes(data, keys))
    groups = [Group("model", [""], "l")] + ([Group("paper row", [""], "l")] if labelled else [])
    for c in columns:
        groups.append(Group(_title(data, c), ["ours", "paper", "Δ"] if c in with_paper else [""]))
    table = Table(groups)
    grouped: dict[tuple[str, str], list[str]] = {}  # (column, note) -> keys
    for key in keys:
        cells = [key + marks.get(key, "")] + ([data.label(key) or MISSING] if labelled else [])
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
                grouped.setdefault((_title(data, c), note), []).append(key)
        table.add(cells)
    table.caption = _caption(data, keys)
    notes = [f"{column}: {note} ({', '.join(k)})" for (column, note), k in grouped.items()]
    if data.budget != data.paper.budget and with_paper:
        notes.insert(0, f"our largest budget is {data.budget} tokens, the paper's {data.paper.budget}")
    table.notes = footnotes + notes
    return table


def _caption(data: ReportData, keys: list[str]) -> str:
    sizes = []
    for bench in data.benchmarks:
        ns = sorted(
            {
                data.summaries[k]["benchmarks"][bench]["n"]
                for k in keys
                if bench in data.summaries[k]["benchmarks"]
            }
        )
        sizes.append(f"{bench} {'/'.join(map(str, ns)) or '?'}")
    evaluation = data.config.get("evaluation") or {}
    return (
        f"Accuracy (%) at {data.budget} tokens: avg@n, the mean over problems of the share of a problem's "
        f"n samples graded correct (n: {', '.join(sizes)}). ID avg: mean over "
        f"{', '.join(evaluation.get('in_domain') or [])}; OOD avg: mean over "
        f"{', '.join(evaluation.get('out_of_domain') or [])}. paper: the paper's number "
        f"(src/lie/report/paper_numbers.yaml, at {data.paper.budget} tokens); Δ = ours − paper. "
        f"{MISSING}: not available (notes below). [n]: a footnote below."
    )


# ---------------------------------------------------------------- evaluation lengths
def length_rows(data: ReportData) -> list[dict[str, Any]]:
    """Mean response length (tokens) per key and benchmark, at every budget of its summary."""
    rows = []
    for key in data.keys:
        summary = data.summaries[key]
        for bench in data.benchmarks:
            entry = summary["benchmarks"].get(bench)
            if entry is None:
                rows.append(
                    dict(
                        key=key, label=data.label(key), bench=bench, note=f"not in {data.layout.summary(key)}"
                    )
                )
                continue
            lengths = entry.get("mean_tokens")
            if lengths is None:
                raise LieError(
                    f"{data.layout.summary(key)}: no mean_tokens (an older `lie evaluate`); rerun `lie evaluate` for {key}"
                )
            for budget, value in lengths.items():
                rows.append(dict(key=key, label=data.label(key), bench=bench, budget=int(budget),
                                 mean_tokens=value, samples=entry["samples"], note=""))  # fmt: skip
    return rows


def length_table(data: ReportData, rows: list[dict[str, Any]]) -> Table:
    """Rows: keys; columns: benchmarks in the paper's order, mean tokens at the largest budget."""
    benches = [c for c in result_columns(data) if c not in DOMAINS]
    value = {
        (r["key"], r["bench"]): r.get("mean_tokens") for r in rows if r.get("budget") in (None, data.budget)
    }
    table = Table([Group("model", [""], "l")] + [Group(data.paper.title(b), [""]) for b in benches])
    for key in data.keys:
        table.add([key] + [fmt(value.get((key, b)), 0) for b in benches])
    table.caption = (
        f"Mean response length at evaluation (tokens, a response longer than {data.budget} counted as "
        f"{data.budget}): the paper's claim is that LIE's responses are longer and deeper; training lengths are "
        "in figures/dynamics.png. Every budget: lengths.csv."
    )
    return table


# ---------------------------------------------------------------- sensitivity
def sensitivity_rows(data: ReportData, keys: list[str]) -> list[dict[str, Any]]:
    """Per run: the knobs it varies (theta, n, e), its domain averages and in-domain mean length."""
    rows = []
    evaluation = data.config.get("evaluation") or {}
    budget = str(data.budget)
    for key in keys:
        knobs = {
            **(data.config.get("reward") or {}),
            **((_experiments(data).get(key) or {}).get("reward") or {}),
        }
        lengths = [data.summaries[key]["benchmarks"][b]["mean_tokens"][budget]
                   for b in evaluation.get("in_domain") or [] if b in data.summaries[key]["benchmarks"]]  # fmt: skip
        row = dict(key=key, theta=knobs.get("theta"), n=knobs.get("n"),
                   e=(_experiments(data).get(key) or {}).get("extra_tokens"),
                   mean_tokens_in_domain=sum(lengths) / len(lengths) if lengths else None)  # fmt: skip
        for domain in DOMAINS:
            row[domain] = _pct(_domain_entry(data, key, domain)["budgets"][budget]["avg"])
        rows.append(row)
    return rows


def sensitivity_table(data: ReportData, rows: list[dict[str, Any]]) -> Table:
    groups = [Group("model", [""], "l"), Group("θ", [""]), Group("n", [""]), Group("e (ΔL)", [""])]
    groups += [Group("ID avg", [""]), Group("OOD avg", [""]), Group("ID mean tokens", [""])]
    table = Table(groups)
    for r in rows:
        table.add([r["key"], str(r["theta"]), str(r["n"]), str(r["e"]), fmt(r["in_domain"]),
                   fmt(r["out_of_domain"]), fmt(r["mean_tokens_in_domain"], 0)])  # fmt: skip
    table.caption = (
        f"Sensitivity of LIE to its redundancy threshold θ (reward.theta), n-gram size n (reward.n) and length "
        f"increment e (extra_tokens): accuracy (%) and mean in-domain response length at {data.budget} tokens, "
        "beside the run the others vary (the paper's appendix discusses these knobs)."
    )
    return table


def _experiments(data: ReportData) -> dict[str, Any]:
    return data.config.get("experiments") or {}


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
