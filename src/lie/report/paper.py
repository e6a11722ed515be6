"""The paper's numbers (``paper_numbers.yaml``), looked up by config.yaml's names.

One file holds every number we compare with, and where each comes from, so that a table cell
"paper" can always be traced. Lookups return ``None`` where the paper gives nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from lie.config.yamlio import load_yaml_mapping
from lie.core.errors import LieError

PAPER_FILE = Path(__file__).with_name("paper_numbers.yaml")
DOMAINS = ("in_domain", "out_of_domain")


@dataclass(frozen=True)
class Paper:
    data: dict[str, Any]
    source: str = str(PAPER_FILE)

    # main table
    @property
    def budget(self) -> int:
        return int(self.data["main"]["budget"])

    def domain_benchmarks(self, domain: str) -> list[str]:
        return list(self.data["main"][domain])

    def row(self, key: str) -> dict[str, Any] | None:
        return (self.data["main"].get("rows") or {}).get(key)

    def label(self, key: str) -> str | None:
        row = self.row(key)
        return row.get("label") if row else None

    def main_value(self, key: str, bench: str) -> float | None:
        """The paper's accuracy (percent) of ``key`` on ``bench`` (or ``in_domain``/``out_of_domain``)."""
        row = self.row(key)
        value = (row.get("values") or {}).get(bench) if row else None
        return float(value) if value is not None else None

    def comparable_domain(self, domain: str, benchmarks: Sequence[str]) -> bool:
        """Our domain average compares with the paper's only over the same benchmarks."""
        return set(benchmarks) == set(self.domain_benchmarks(domain))

    # test-time scaling
    def tts_curves(self) -> dict[str, tuple[str, list[int], list[float]]]:
        """``{key: (label, budgets, in-domain averages as fractions)}``."""
        tts = self.data["tts"]
        return {
            key: (entry["label"], list(tts["budgets"]), [float(v) for v in entry["values"]])
            for key, entry in tts["curves"].items()
        }

    def tts_value(self, key: str, bench: str, budget: int) -> float | None:
        tts = self.data["tts"]
        entry = tts["curves"].get(key)
        if entry is None or bench != tts["bench"] or budget not in tts["budgets"]:
            return None
        return float(entry["values"][tts["budgets"].index(budget)])

    # titles and the notes on how the paper's numbers came about
    def title(self, bench: str) -> str:
        """The paper's column title of a benchmark (its config name when the paper has none)."""
        return str((self.data.get("titles") or {}).get(bench) or bench)

    @property
    def checkpoint(self) -> str | None:
        return self.data.get("checkpoint")

    def conflict(self, data: str) -> str | None:
        """Where the paper and the authors' code disagree on a training set (config name)."""
        return (self.data.get("conflicts") or {}).get(data)

    # behaviours and C_context
    def behaviour_count(self, key: str, behaviour: str) -> int | None:
        counts = (self.data.get("behaviours") or {}).get("counts") or {}
        value = (counts.get(behaviour) or {}).get(key)
        return int(value) if value is not None else None

    def c_context(self, key: str) -> float | None:
        value = ((self.data.get("c_context") or {}).get("values") or {}).get(key)
        return float(value) if value is not None else None


@cache
def _load(path: str) -> dict[str, Any]:
    data = load_yaml_mapping(path, what="the paper's numbers")
    for section in ("main", "tts"):
        if not isinstance(data.get(section), dict):
            raise LieError(f"{path}: section '{section}' is missing")
    for key, entry in data["tts"]["curves"].items():
        if len(entry["values"]) != len(data["tts"]["budgets"]):
            raise LieError(f"{path}: tts.curves.{key} has {len(entry['values'])} values for "
                           f"{len(data['tts']['budgets'])} budgets")  # fmt: skip
    return data


def load_paper(path: str | Path | None = None) -> Paper:
    source = str(path or PAPER_FILE)
    return Paper(_load(source), source)
