"""Which table of the report each evaluated model is a row of, as the paper lays its results out.

- ``main``: the main model (the first of ``evaluation.base_models``, else the first run's) and
  its runs: the paper's Table 1 (Qwen3-4B-Base on DAPO-Math-17k), the higher-clip runs and the
  continual stage;
- ``families``: other model families (Qwen3-4B post-trained on Polaris, OctoThinker);
- ``scale``: the main model's family at other sizes (the hub id with its size taken out is the
  same: ``Qwen/Qwen3-1.7B-Base`` and ``Qwen/Qwen3-8B-Base`` beside ``Qwen/Qwen3-4B-Base``);
- ``ablation``: the length-only runs, each beside the LIE run it differs from (also in ``main``);
- ``sensitivity``: the runs of ``experiments`` marked ``group: sensitivity`` (optional, selected
  with ``runs=[...]``), beside the run they vary.

Only the tables that get a row are written (:func:`tables_of`), so the report's files follow
from the config alone (Snakemake declares them before anything runs).
"""

from __future__ import annotations

import re
from typing import Any

from lie import config as cfgmod
from lie.config.sections import Evaluation

TABLES = {  # name: title
    "main": "Main results",
    "families": "Other model families",
    "scale": "Model scale",
    "ablation": "Ablation: the length reward alone against LIE",
    "sensitivity": "Sensitivity to LIE's knobs",
}
SIZE = re.compile(r"\d+(?:\.\d+)?[Bb]")


def evaluated_keys(config: dict[str, Any]) -> list[str]:
    """Runs (``selected_runs`` order), then the base models: one row each in the tables."""
    keys = cfgmod.selected_runs(config)
    for name in Evaluation.of(config).base_models:
        if name not in keys:
            keys.append(name)
    return keys


def model_of(config: dict[str, Any], key: str) -> str:
    experiments = config.get("experiments") or {}
    return experiments[key]["model"] if key in experiments else key


def main_model(config: dict[str, Any]) -> str | None:
    base = Evaluation.of(config).base_models
    if base:
        return base[0]
    runs = cfgmod.selected_runs(config)
    return model_of(config, runs[0]) if runs else None


def _family(config: dict[str, Any], model: str) -> str | None:
    hf_id = ((config.get("models") or {}).get(model) or {}).get("hf_id")
    return SIZE.sub("*", hf_id) if hf_id else None


def group_of(config: dict[str, Any], key: str) -> str:
    """The table ``key`` is a row of (``ablation`` partners are found by :func:`table_keys`)."""
    spec = (config.get("experiments") or {}).get(key) or {}
    if spec.get("group") == "sensitivity":
        return "sensitivity"
    if spec.get("lie") == "length-only":
        return "ablation"
    model, main = model_of(config, key), main_model(config)
    if model == main:
        return "main"
    family = _family(config, model)
    return "scale" if family is not None and family == _family(config, main) else "families"


def partner(config: dict[str, Any], run: str) -> str | None:
    """The run an ablation or sensitivity run is compared with: same model, data and algorithm, LIE on."""
    experiments = config.get("experiments") or {}
    spec = experiments[run]
    for name, other in experiments.items():
        same = all(other.get(k) == spec.get(k) for k in ("model", "data", "algorithm"))
        if name != run and same and other.get("lie") == "on" and other.get("parent") is None:
            if other.get("group") is None:
                return name
    return None


def baseline_of(config: dict[str, Any], run: str) -> str | None:
    """The run a LIE run is compared with: same model, data and algorithm, LIE off (first stages only)."""
    experiments = config.get("experiments") or {}
    spec = experiments.get(run) or {}
    if spec.get("lie") != "on" or spec.get("parent") or spec.get("group"):
        return None
    for name, other in experiments.items():
        same = all(other.get(k) == spec.get(k) for k in ("model", "data", "algorithm"))
        if same and other.get("lie") == "off" and not other.get("parent") and not other.get("group"):
            return name
    return None


def table_keys(config: dict[str, Any], keys: list[str]) -> dict[str, list[str]]:
    """Every table that gets a row: its keys, base models first (as the paper's Table 1), then the runs
    in ``keys`` order."""
    tables: dict[str, list[str]] = {name: [] for name in TABLES}
    runs = config.get("experiments") or {}
    for key in sorted(keys, key=lambda k: k in runs):  # stable: bases, then runs, each in keys order
        tables[group_of(config, key)].append(key)
    for name in ("ablation", "sensitivity"):
        for run in list(tables[name]):
            ref = partner(config, run)
            if ref in keys and ref not in tables[name]:
                tables[name].insert(tables[name].index(run), ref)
    return {name: rows for name, rows in tables.items() if rows}


def tables_of(config: dict[str, Any]) -> list[str]:
    """The tables the report writes for ``config`` (a pure function of the config)."""
    return list(table_keys(config, evaluated_keys(config)))
