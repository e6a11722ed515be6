"""The report's tables: results beside the paper (one per group of :mod:`lie.report.groups`, in the
paper's column order, with the config's footnotes), evaluation lengths, sensitivity, test-time
scaling, behaviours, diversity, dynamics.

Each table is built once as long rows (the CSV, machine-readable, full precision, metric names
with their parameters) and, for Markdown/LaTeX, as a :class:`lie.report.render.Table` with
rounded cells. Gaps: a benchmark missing from a summary, or a domain average with a missing
benchmark, is ``—`` in Markdown, ``--`` in LaTeX, empty in CSV, with the reason in a note.
"""

from __future__ import annotations

import math
from typing import Any

from lie.analysis.behaviours import Tally
from lie.analysis.dynamics import FIELDS, phase_mean
from lie.config.settings import EpochStep
from lie.core.errors import LieError
from lie.report import intervals as iv
from lie.report.groups import baseline_of
from lie.report.inputs import READERS, ReportData
from lie.report.notes import markers, table_notes
from lie.report.paper import DOMAINS
from lie.report.render import MISSING, Group, Table, fmt

DOMAIN_TITLES = {"in_domain": "ID avg", "out_of_domain": "OOD avg"}
DOMAIN_METRIC = "avg@n (mean over benchmarks)"  # lie evaluate's name for the domain averages
RESULT_COLUMNS = (
    "table",
    "key",
    "label",
    "versus",
    "bench",
    "reader",
    "metric",
    "budget",
    "ours_pct",
    "ours_se_pct",
    "ours_inside_noise",
    "paper_pct",
    "diff_pct",
    "diff_se_pct",
    "diff_inside_noise",
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
    expected = _domain_benches(data, domain)
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
    evaluation = data.config.evaluation
    in_domain = [b for b in evaluation.in_domain if b in data.benchmarks]
    out_domain = [b for b in evaluation.out_of_domain if b in data.benchmarks]
    rest = [b for b in data.benchmarks if b not in in_domain and b not in out_domain]
    return [*in_domain, "in_domain", *out_domain, "out_of_domain", *rest]


def read_columns(data: ReportData) -> set[str]:
    """The columns that depend on the multiple-choice reader: choice benchmarks and averages over one."""
    choice = {b for b in data.benchmarks if _kind(data, b) == "choice"}
    return choice | {d for d in DOMAINS if choice & set(_domain_benches(data, d))}


def _kind(data: ReportData, bench: str) -> str | None:
    """An evaluation set's ``kind`` (math or choice); None for a name the config does not define."""
    spec = data.config.datasets.get(bench)
    return spec.kind if spec is not None and spec.group == "eval" else None


def _readers(data: ReportData, column: str) -> list[str | None]:
    """The readers a column is shown under: the authors' first (the paper's), then ours; or the one."""
    return list(READERS) if column in read_columns(data) else [None]


def _budgets(data: ReportData, key: str, entry: dict[str, Any], reader: str | None) -> dict[str, Any] | None:
    """A summary entry's numbers per budget under ``reader`` (None: as graded), or None when not read so."""
    if reader is None:
        return entry["budgets"]
    if "by_reader" in entry:
        return (entry["by_reader"].get(reader) or {}).get("budgets")
    mode = (data.summaries[key].get("grading") or {}).get("choice_grading")
    return entry["budgets"] if mode == reader else None


def value(data: ReportData, key: str, column: str, reader: str | None) -> tuple[float | None, list[str]]:
    """Our accuracy (percent) of ``key`` in ``column`` under ``reader``, and notes on a gap."""
    summary, budget = data.summaries[key], str(data.budget)
    if column in DOMAINS:
        entry = _domain_entry(data, key, column)
        notes = [f"missing: {' '.join(entry['missing'])}"] if entry.get("missing") else []
        budgets = _budgets(data, key, entry, reader)
        if budgets is None:  # no multiple-choice benchmark graded, or an older summary
            return None, notes or [f"not read by the {reader} reader: rerun `lie evaluate`"]
        return _pct(budgets[budget]["avg"]), notes
    entry = summary["benchmarks"].get(column)
    if entry is None:
        return None, [f"not in {data.layout.summary(key)}"]
    budgets = _budgets(data, key, entry, reader)
    if budgets is None:
        return None, [f"not read by the {reader} reader: rerun `lie evaluate`"]
    return _pct(budgets[budget][entry["avg@n"]]), []


def graded_by(summary: dict[str, Any]) -> str | None:
    """The multiple-choice reader a summary's main grades used (``lie evaluate`` records it)."""
    grading = summary.get("grading") or {}
    return grading.get("choice_grading")


def main_reader(data: ReportData) -> str:
    """Which multiple-choice reader the summaries' main grades used (the tables of one reader: test-time
    scaling, sensitivity): "" where no evaluated benchmark is multiple choice."""
    if not read_columns(data):
        return ""
    modes = sorted({str(graded_by(summary) or "?") for summary in data.summaries.values()})
    return f"multiple choice read by the {'/'.join(modes)} reader (evaluation.choice_grading)"


def _domain_benches(data: ReportData, column: str) -> list[str]:
    """The benchmarks a domain column averages (none for a benchmark's own column)."""
    evaluation = data.config.evaluation
    return list(
        {"in_domain": evaluation.in_domain, "out_of_domain": evaluation.out_of_domain}.get(column, ())
    )


def standard_error(data: ReportData, key: str, column: str, reader: str | None) -> float | None:
    """The standard error (points) of our number, from the per-problem scores."""
    scores = (data.problem_scores.get(key) or {}).get(reader)
    if scores is None:
        return None
    benches = _domain_benches(data, column) if column in DOMAINS else [column]
    se = iv.combined_se([iv.bench_se(scores[b]) if b in scores else None for b in benches])
    return _pct(se)


def paper_error(data: ReportData, keys: tuple[str, ...], column: str, reader: str | None) -> float | None:
    """The standard error (points) of our number minus the paper's (one key), or of our gain minus the
    paper's gain (LIE run, baseline): benchmark by benchmark, the re-sampling SE of ``keys``' numbers
    where every problem has k > 1 samples, else the between-problem SE (paired for a gain), combined
    over a domain's benchmarks (:func:`lie.report.intervals.versus_paper`)."""
    benches = _domain_benches(data, column) if column in DOMAINS else [column]
    per_key: list[iv.ProblemScores] = []
    for key in keys:
        scores = (data.problem_scores.get(key) or {}).get(reader)
        if scores is None:
            return None
        per_key.append(scores)
    parts: list[float | None] = []
    for bench in benches:
        if any(bench not in scores for scores in per_key):
            parts.append(None)
            continue
        of_bench = [scores[bench] for scores in per_key]
        resampled = [iv.resampling_se(s) for s in of_bench]
        known = [r for r in resampled if r is not None]
        both = math.sqrt(sum(r * r for r in known)) if len(known) == len(resampled) else None
        between = iv.bench_se(of_bench[0]) if len(of_bench) == 1 else iv.paired_se(*of_bench)
        parts.append(iv.noise_se(both, between))
    return _pct(iv.versus_paper(parts))


def paired_error(data: ReportData, key: str, base: str, column: str, reader: str | None) -> float | None:
    """The standard error (points) of ``key`` − ``base``, problem by problem."""
    a, b = ((data.problem_scores.get(k) or {}).get(reader) for k in (key, base))
    if a is None or b is None:
        return None
    benches = _domain_benches(data, column) if column in DOMAINS else [column]
    se = iv.combined_se([iv.paired_se(a[x], b[x]) if x in a and x in b else None for x in benches])
    return _pct(se)


def _paper(data: ReportData, key: str, column: str, note: list[str]) -> float | None:
    paper = data.paper.main_value(key, column)
    if paper is not None and column in DOMAINS:
        if not data.paper.comparable_domain(column, _domain_benches(data, column)):
            note.append("paper's average is over other benchmarks")
            return None
    return paper


def _minus(a: float | None, b: float | None) -> float | None:
    return a - b if a is not None and b is not None else None


def result_rows(data: ReportData, keys: list[str], table: str = "main") -> list[dict[str, Any]]:
    """Per key, benchmark or domain average and reader: ours, the paper's, Δ with its standard error;
    then per LIE run with its baseline in ``keys``, the gain (paired) beside the paper's gain."""
    rows: list[dict[str, Any]] = []
    for key in keys:
        for column in result_columns(data):
            metric = DOMAIN_METRIC if column in DOMAINS else _metric(data, key, column)
            for reader in _readers(data, column):
                ours, notes = value(data, key, column, reader)
                paper = _paper(data, key, column, notes)
                se = standard_error(data, key, column, reader) if ours is not None else None
                diff = _minus(ours, paper)
                diff_se = paper_error(data, (key,), column, reader) if diff is not None else None
                rows.append(dict(table=table, key=key, label=data.label(key), versus="", bench=column,
                                 reader=reader or "", metric=metric, budget=data.budget, ours_pct=ours,
                                 ours_se_pct=se, paper_pct=paper, diff_pct=diff,
                                 diff_se_pct=diff_se if diff is not None else None,
                                 diff_inside_noise=iv.inside_noise(diff, diff_se), note="; ".join(notes)))  # fmt: skip
    for key, base in baseline_pairs(data, keys):
        rows += _gain_rows(data, key, base, table)
    return rows


def _metric(data: ReportData, key: str, column: str) -> str:
    entry = data.summaries[key]["benchmarks"].get(column)
    return entry["avg@n"] if entry else "avg@n"


def baseline_pairs(data: ReportData, keys: list[str]) -> list[tuple[str, str]]:
    """(LIE run, its baseline) for every LIE run of ``keys`` whose baseline is also a row."""
    return [(k, b) for k in keys if (b := baseline_of(data.config, k)) is not None and b in keys]


def _gain_rows(data: ReportData, key: str, base: str, table: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for column in result_columns(data):
        metric = DOMAIN_METRIC if column in DOMAINS else _metric(data, key, column)
        for reader in _readers(data, column):
            (ours_a, notes), (ours_b, notes_b) = (value(data, k, column, reader) for k in (key, base))
            gain = _minus(ours_a, ours_b)
            se = paired_error(data, key, base, column, reader) if gain is not None else None
            paper = _minus(_paper(data, key, column, notes), _paper(data, base, column, notes_b))
            diff = _minus(gain, paper)
            diff_se = paper_error(data, (key, base), column, reader) if diff is not None else None
            rows.append(dict(table=table, key=key, label=data.label(key), versus=base, bench=column,
                             reader=reader or "", metric=metric, budget=data.budget, ours_pct=gain, ours_se_pct=se,
                             ours_inside_noise=iv.inside_noise(gain, se), paper_pct=paper, diff_pct=diff,
                             diff_se_pct=diff_se if diff is not None else None,
                             diff_inside_noise=iv.inside_noise(diff, diff_se),
                             note="; ".join(dict.fromkeys(notes + notes_b))))  # fmt: skip
    return rows


def compared_steps(data: ReportData, key: str, base: str) -> str:
    """What a gain row compares: ``15 vs 10 epochs``, with the evaluated steps where final.json names them."""

    def side(run: str) -> tuple[str, str]:
        choice = data.config.run(run).eval_step
        epochs = choice.epochs if isinstance(choice, EpochStep) else data.config.run(run).epochs
        step = data.steps.get(run)
        return str(epochs), "?" if step is None else str(step)

    (a, step_a), (b, step_b) = side(key), side(base)
    steps = "" if step_a == step_b == "?" else f", steps {step_a} vs {step_b}"
    return f"{a} vs {b} epochs{steps}"


def sources(data: ReportData, keys: list[str], files: str) -> str:
    """The note naming the files a table's numbers come from and the step each run was evaluated at."""
    runs = [k for k in keys if k in data.config.experiments]
    at = "; ".join(f"{run} {data.steps.get(run) or '?'}" for run in runs)
    steps = f" Evaluated steps (runs/<run>/final.json; ?: not recorded): {at}." if runs else ""
    return f"Files: {files} under {data.layout.root}.{steps}"


def _title(data: ReportData, column: str) -> str:
    return DOMAIN_TITLES.get(column) or data.paper.title(column)


def with_interval(diff: float | None, se: float | None) -> str:
    """``+1.2±3.4`` (the 95% interval's half-width), ``~`` in front when it holds 0."""
    if diff is None:
        return MISSING
    if se is None:
        return fmt(diff, sign=True)
    if se == 0:  # every problem moved alike (an all-zero column): no spread to put an interval on
        return f"{fmt(diff, sign=True)} (no spread)"
    mark = "~" if iv.inside_noise(diff, se) else ""
    return f"{mark}{fmt(diff, sign=True)}±{iv.Z95 * se:.1f}"


def result_table(data: ReportData, keys: list[str], rows: list[dict[str, Any]]) -> Table:
    """Rows: keys, then LIE − baseline; columns as the paper's (:func:`result_columns`), each with paper
    and Δ where it has one, and the robust reader's number beside the authors' for multiple choice."""
    columns = result_columns(data)
    cell = {(r["key"], r["versus"], r["bench"], r["reader"]): r for r in rows}
    first = {c: _readers(data, c)[0] or "" for c in columns}
    pairs = baseline_pairs(data, keys)
    compared = [(k, "") for k in keys] + [(k, b) for k, b in pairs]
    with_paper = {
        c for c in columns if any(cell[(k, v, c, first[c])]["paper_pct"] is not None for k, v in compared)
    }
    labelled = any(data.label(k) for k in keys)
    marks, footnotes = markers(table_notes(data, keys))
    groups = [Group("model", [""], "l")] + ([Group("paper row", [""], "l")] if labelled else [])
    for c in columns:
        subs = ["ours", "paper", "Δ"] if c in with_paper else [""]
        if c in read_columns(data):
            subs = [f"{s} ({READERS[0]})".strip() if s in ("ours", "") else s for s in subs] + [READERS[1]]
        groups.append(Group(_title(data, c), subs))
    table = Table(groups)
    grouped: dict[tuple[str, str], list[str]] = {}  # (column, note) -> keys
    for key, versus in compared:
        name = (
            key + marks.get(key, "")
            if not versus
            else f"{key} − {versus} ({compared_steps(data, key, versus)})"
        )
        cells = [name]
        if labelled:
            label = data.label(key) if not versus else f"{data.label(key)} − {data.label(versus)}"
            cells.append(label if data.label(key) else MISSING)
        for c in columns:
            r = cell[(key, versus, c, first[c])]
            ours = r["ours_pct"]
            cells.append(with_interval(ours, r["ours_se_pct"]) if versus else fmt(ours))
            if c in with_paper:
                cells.append(fmt(r["paper_pct"], sign=bool(versus)))
                cells.append(with_interval(r["diff_pct"], r["diff_se_pct"]))
            if c in read_columns(data):
                other = cell[(key, versus, c, READERS[1])]
                cells.append(
                    with_interval(other["ours_pct"], other["ours_se_pct"])
                    if versus
                    else fmt(other["ours_pct"])
                )
            for r_ in (r, cell.get((key, versus, c, READERS[1])) or {}):
                for note in filter(None, (r_.get("note") or "").split("; ")):
                    grouped.setdefault((_title(data, c), note), []).append(key)
        table.add(cells)
    table.caption = _caption(
        data, keys, bool(with_paper), bool(pairs), bool(read_columns(data) & set(columns))
    )
    notes = [f"{column}: {note} ({', '.join(dict.fromkeys(k))})" for (column, note), k in grouped.items()]
    if data.budget != data.paper.budget and with_paper:
        notes.insert(0, f"our largest budget is {data.budget} tokens, the paper's {data.paper.budget}")
    table.notes = (
        footnotes + notes + [sources(data, keys, "scores/<key>/summary.json and scores/<key>/scores.jsonl")]
    )
    return table


def _caption(data: ReportData, keys: list[str], paper: bool, gains: bool, readers: bool) -> str:
    """What the table's numbers are; the paper's columns, the gain rows and the two readers are
    explained only where the table has them."""
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
    evaluation = data.config.evaluation
    parts = [
        f"Accuracy (%) at {data.budget} tokens: avg@n, the mean over problems of the share of a problem's "
        f"n samples graded correct (n: {', '.join(sizes)}). ID avg: mean over "
        f"{', '.join(evaluation.in_domain)}; OOD avg: mean over "
        f"{', '.join(evaluation.out_of_domain)}."
    ]
    if paper:
        parts.append(
            f"paper: the paper's number (src/lie/report/paper_numbers.yaml, at {data.paper.budget} tokens); "
            "Δ = ours − paper."
        )
    else:
        parts.append(
            "No paper column: no row of this table is a run of the paper (src/lie/report/paper_numbers.yaml)."
        )
    if readers:
        parts.append(
            f"Multiple choice: ({READERS[0]}) read as the authors' script reads it (math-verify, then their A-E "
            f"rules){', compared with the paper' if paper else ''}; {READERS[1]}: our default reader (A-J)."
        )
    if gains:
        parts.append(
            "Rows 'A − B': LIE's gain over its baseline (ours, problem by problem)"
            f"{' beside the paper' + chr(39) + 's gain' if paper else ''}, each side at the epochs the row names: "
            + (
                "a LIE run's checkpoint after its baseline's epochs, equal steps (evaluation.equal_steps: true)"
                if data.config.evaluation.equal_steps
                else "each run after its own epochs, so with config.yaml's (the authors' scripts) a 15-epoch "
                "LIE run against a 10-epoch baseline, not equal steps (evaluation.equal_steps: false)"
            )
            + ("; the paper's gain is its runs as the paper reports them." if paper else ".")
        )
    interval = (
        "±: the 95% interval (1.96 standard errors from the per-problem scores). Ours and a gain (paired, "
        "problem by problem) take the problems as a sample of their kind"
    )
    if paper:
        interval += (
            "; Δ with the paper covers the noise of evaluating again, benchmark by benchmark and combined over "
            "a domain average: on these problems, fixed, where a problem has k > 1 samples (√2 · the "
            "re-sampling SE, p(1−p)/(k−1) a problem), else the problems as a sample (√2 · the between-problem "
            "SE: wider than the re-sampling noise on the authors' own in-domain problems, the right one on "
            "the out-of-domain inputs, which are not theirs)"
        )
    parts.append(
        f"{interval}; ~: inside the noise (the interval holds 0). No interval includes training again with "
        f"another seed. {MISSING}: not available (notes below). [n]: a footnote below."
    )
    return " ".join(parts)


# ---------------------------------------------------------------- evaluation lengths
def bases_first(data: ReportData) -> list[str]:
    """The evaluated keys with the base models first, as the paper's tables and the result tables."""
    return sorted(data.keys, key=lambda k: k in data.config.experiments)


def length_rows(data: ReportData) -> list[dict[str, Any]]:
    """Mean response length (tokens) per key and benchmark, at every budget of its summary."""
    rows: list[dict[str, Any]] = []
    for key in bases_first(data):
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
    for key in bases_first(data):
        table.add([key] + [fmt(value.get((key, b)), 0) for b in benches])
    table.caption = (
        f"Mean response length at evaluation (tokens, a response longer than {data.budget} counted as "
        f"{data.budget}): the paper's claim is that LIE's responses are longer and deeper; training lengths are "
        "in figures/dynamics.png. Every budget: lengths.csv."
    )
    table.notes.append(sources(data, bases_first(data), "scores/<key>/summary.json (mean_tokens)"))
    return table


# ---------------------------------------------------------------- sensitivity
def sensitivity_rows(data: ReportData, keys: list[str]) -> list[dict[str, Any]]:
    """Per run: the knobs it varies (theta, n, e), its domain averages and in-domain mean length."""
    rows: list[dict[str, Any]] = []
    in_domain = data.config.evaluation.in_domain
    budget = str(data.budget)
    for key in keys:
        is_run = key in data.config.experiments
        knobs = data.config.run(key).reward if is_run else data.config.reward
        lengths = [data.summaries[key]["benchmarks"][b]["mean_tokens"][budget]
                   for b in in_domain if b in data.summaries[key]["benchmarks"]]  # fmt: skip
        row = dict(key=key, theta=knobs.theta, n=knobs.n,
                   e=knobs.extra_tokens if is_run else None,
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
        + (f" The averages' {main_reader(data)}." if main_reader(data) else "")
    )
    table.notes.append(sources(data, [r["key"] for r in rows], "scores/<key>/summary.json"))
    return table


# ---------------------------------------------------------------- test-time scaling
def tts_rows(data: ReportData) -> list[dict[str, Any]]:
    """Accuracy (fraction) per key, benchmark or domain average, and budget, with the paper's curve."""
    rows: list[dict[str, Any]] = []
    read = read_columns(data)
    reader = main_reader(data)
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
                                 accuracy=value, note=reader if bench in read else ""))  # fmt: skip
        for domain in DOMAINS:
            entry = _domain_entry(data, key, domain)
            notes = [f"missing: {' '.join(entry['missing'])}" if entry.get("missing") else "",
                     reader if domain in read else ""]  # fmt: skip
            note = "; ".join(n for n in notes if n)
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
    rows: list[dict[str, Any]] = []
    for key in bases_first(data):
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
    for key in bases_first(data):
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
    table.notes.append(sources(data, bases_first(data), "generations/<key>/<benchmark>.jsonl"))
    return table


# ---------------------------------------------------------------- diversity
def diversity_rows(data: ReportData) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    distinct, overlap = f"group_distinct:n={data.n}", f"group_overlap:n={data.n}"
    for key in bases_first(data):
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
    for key in bases_first(data):
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
    files = "runs/<run>/rollouts and metrics (train), generations/<key>/<benchmark>.jsonl (benchmarks)"
    table.notes.append(sources(data, bases_first(data), files))
    return table


def dynamics_rows(data: ReportData) -> list[dict[str, Any]]:
    return [row for run in data.runs for row in data.dynamics[run].rows()]


DYNAMICS_COLUMNS = ("run", *FIELDS)
