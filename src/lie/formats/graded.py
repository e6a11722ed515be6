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
from pathlib import Path
from typing import Any

from lie.core.errors import LieError

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
    from lie.formats.jsonl import atomic_output, dumps

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
    return summary
