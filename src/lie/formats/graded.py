"""Graded evaluation output (``scores/<key>/{scores.jsonl,summary.json}``): the grades and summaries
that ``lie evaluate`` writes and the report reads (not the training reward, ``lie score``).

Scores, one JSON line per sample: ``bench``, ``index``, ``sample``, ``kind``, ``gold``,
``num_tokens``, ``finish_reason``, ``grades`` ({budget: {``correct``, ``pred``, ``status``[,
``message``]}}). The summary (``.json``, or long rows in ``.csv``): per benchmark ``problems``,
``n``, ``samples``, ``avg@n`` (the metric's name), ``budgets`` ({budget: metrics}), ``mean_tokens``;
``in_domain``/``out_of_domain`` averages; ``grading`` (limit, choice mode, counts).
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

from lie.core.errors import LieError
from lie.formats.jsonl import atomic_output, dumps, read_jsonl

DOMAINS = ("in_domain", "out_of_domain")


def summary_rows(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """The summary as long rows ``bench, budget, metric, value, note`` (the CSV form)."""
    rows = []
    for bench, entry in summary["benchmarks"].items():
        for budget, metrics in entry["budgets"].items():
            for metric, value in metrics.items():
                rows.append({"bench": bench, "budget": budget, "metric": metric, "value": value, "note": ""})
            if budget in entry.get("mean_tokens", {}):
                value = entry["mean_tokens"][budget]
                rows.append(
                    {"bench": bench, "budget": budget, "metric": "mean_tokens", "value": value, "note": ""}
                )
    for domain in DOMAINS:
        entry = summary[domain]
        note = f"missing: {' '.join(entry['missing'])}" if entry["missing"] else ""
        for budget, values in entry["budgets"].items():
            value = values["avg"]
            rows.append(
                {
                    "bench": domain,
                    "budget": budget,
                    "metric": "avg@n (mean over benchmarks)",
                    "value": "" if value is None else value,
                    "note": note,
                }
            )
    return rows


def write_summary(summary: dict[str, Any], path: str) -> None:
    with atomic_output(path) as out:
        if str(path).lower().endswith(".csv"):
            writer = csv.DictWriter(out, fieldnames=["bench", "budget", "metric", "value", "note"])
            writer.writeheader()
            writer.writerows(summary_rows(summary))
        else:
            out.write(dumps(summary, indent=2) + "\n")


def read_summary(path: str | Path, fix: str = "rerun `lie evaluate`") -> dict[str, Any]:
    """A summary written by :func:`write_summary` (``.json``), checked for the keys readers use."""
    path = Path(path)
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise LieError(f"{path} is missing: {fix}") from None
    except (OSError, ValueError, RecursionError) as exc:  # RecursionError: JSON nested thousands deep
        raise LieError(f"{path} cannot be read ({exc}): {fix}") from None
    if not isinstance(summary, dict) or not isinstance(summary.get("benchmarks"), dict):
        raise LieError(f"{path}: no 'benchmarks' mapping; it is not a `lie evaluate` summary: {fix}")
    if not isinstance(summary.get("budgets"), list):
        raise LieError(f"{path}: no 'budgets' list; it is not a `lie evaluate` summary: {fix}")
    for budget in summary["budgets"]:  # readers compare them with the config's budgets as integers
        if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
            raise LieError(
                f"{path}: key 'budgets' must hold token budgets (integers >= 1), got {_shown(budget)}: {fix}"
            )
    for bench, entry in summary["benchmarks"].items():
        _check_bench_summary(entry, f"benchmarks.{bench}", path, fix)
    return summary


def _shown(value: Any) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return f"{type(value).__name__} {value!r:.40}"


def _check_bench_summary(entry: Any, key: str, path: Path, fix: str) -> None:
    """A benchmark's summary holds only what ``write_summary`` writes: counts, fractions in [0, 1] and
    finite token means; anything else (NaN, 700 %, ``true``, ``"0.5"``) would be tabulated as real."""

    def bad(at: str, expected: str, value: Any) -> LieError:
        return LieError(f"{path}: key '{at}' must be {expected}, got {_shown(value)}: {fix}")

    def number(value: Any) -> bool:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)

    if not isinstance(entry, dict):
        raise bad(key, "an object", entry)
    for name in ("problems", "n", "samples"):
        value = entry.get(name, 0)
        if not (number(value) and isinstance(value, int) and value >= 0):
            raise bad(f"{key}.{name}", "a count (an integer >= 0)", value)
    readers = entry.get("by_reader") or {}
    if not isinstance(readers, dict):
        raise bad(f"{key}.by_reader", "an object", readers)
    tables = [(f"{key}.budgets", entry.get("budgets") or {})]
    tables += [(f"{key}.by_reader.{r}.budgets", (v or {}).get("budgets") or {}) if isinstance(v, dict) else
               (f"{key}.by_reader.{r}", v) for r, v in readers.items()]  # fmt: skip
    for at, budgets in tables:
        if not isinstance(budgets, dict):
            raise bad(at, "an object", budgets)
        for budget, cell in budgets.items():
            if not isinstance(cell, dict):
                raise bad(f"{at}.{budget}", "an object", cell)
            for metric, value in cell.items():
                if metric.startswith("n_") and not (number(value) and isinstance(value, int) and value >= 0):
                    raise bad(f"{at}.{budget}.{metric}", "a count (an integer >= 0)", value)
                if "@" in metric and not (number(value) and 0 <= value <= 1):
                    raise bad(f"{at}.{budget}.{metric}", "a number in [0, 1]", value)
    means = entry.get("mean_tokens") or {}
    if not isinstance(means, dict):
        raise bad(f"{key}.mean_tokens", "an object", means)
    for budget, value in means.items():
        if value is not None and not (number(value) and value >= 0):
            raise bad(f"{key}.mean_tokens.{budget}", "a finite number >= 0", value)


def read_graded_lines(path: str | Path, fix: str = "rerun `lie evaluate`") -> list[dict[str, Any]]:
    """The grade lines of ``path`` (``lie evaluate --out-scores``), each checked by
    :func:`check_graded_line`: a missing file or a bad line is one LieError naming the file, the
    line and the key, ending with ``fix``."""
    if not Path(path).is_file():
        raise LieError(f"{path} is missing: {fix}")
    return [check_graded_line(obj, f"{path} line {lineno}", fix) for lineno, obj in read_jsonl(str(path))]


def check_graded_line(line: Any, where: str, fix: str = "rerun `lie evaluate`") -> dict[str, Any]:
    """``line`` if it is a grade line: ``bench`` (text), ``index`` and ``sample`` (integers),
    ``grades`` ({budget: {``correct``: bool, ...}}) and, if present, ``grades_by_reader``
    ({reader: grades}); else a LieError naming ``where`` and the key."""

    def bad(key: str, expected: str, value: Any) -> LieError:
        got = "missing" if value is None else f"{type(value).__name__} {value!r:.60}"
        return LieError(
            f"{where}: field '{key}' must be {expected}, got {got}; not a `lie evaluate` line: {fix}"
        )

    if not isinstance(line, dict):
        raise bad("(line)", "a JSON object", line)
    if not isinstance(line.get("bench"), str) or not line["bench"]:
        raise bad("bench", "a benchmark name", line.get("bench"))
    for key in ("index", "sample"):
        value = line.get(key)
        if isinstance(value, bool) or not isinstance(value, int):
            raise bad(key, "an integer", value)
    readers = line.get("grades_by_reader")
    if readers is not None and not isinstance(readers, dict):
        raise bad("grades_by_reader", "a mapping of reader to grades", readers)
    for key, grades in [("grades", line.get("grades"))] + [
        (f"grades_by_reader.{r}", g) for r, g in (readers or {}).items()
    ]:
        if not isinstance(grades, dict) or not grades:
            raise bad(key, "a mapping of budget to {correct, pred, status}", grades)
        for budget, grade in grades.items():
            if not str(budget).isdigit():
                raise bad(f"{key}.{budget}", "keyed by a token budget", budget)
            correct = grade.get("correct") if isinstance(grade, dict) else None
            if not isinstance(correct, bool):
                raise bad(f"{key}.{budget}.correct", "true or false", correct)
    return line
