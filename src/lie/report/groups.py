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

from lie import config as cfgmod
from lie.config import settings
from lie.config.typed import Config, Experiment

TABLES = {  # name: title
    "main": "Main results",
    "families": "Other model families",
    "scale": "Model scale",
    "ablation": "Ablation: the length reward alone against LIE",
    "sensitivity": "Sensitivity to LIE's knobs",
}
SIZE = re.compile(r"\d+(?:\.\d+)?[Bb]")


def evaluated_keys(config: Config) -> list[str]:
    """Runs (``selected_runs`` order), then the base models: one row each in the tables."""
    keys = cfgmod.selected_runs(config)
    for name in config.evaluation.base_models:
        if name not in keys:
            keys.append(name)
    return keys


def model_of(config: Config, key: str) -> str:
    return config.model_of(key)


def main_model(config: Config) -> str | None:
    base = config.evaluation.base_models
    if base:
        return base[0]
    runs = cfgmod.selected_runs(config)
    return model_of(config, runs[0]) if runs else None


def _family(config: Config, model: str | None) -> str | None:
    hf_id = config.models[model].hf_id if model is not None and model in config.models else None
    return SIZE.sub("*", hf_id) if hf_id else None


def group_of(config: Config, key: str) -> str:
    """The table ``key`` is a row of (``ablation`` partners are found by :func:`table_keys`)."""
    spec = config.experiments.get(key)
    if spec is not None and spec.group == "sensitivity":
        return "sensitivity"
    if spec is not None and spec.lie == "length-only":
        return "ablation"
    model, main = model_of(config, key), main_model(config)
    if model == main:
        return "main"
    family = _family(config, model)
    return "scale" if family is not None and family == _family(config, main) else "families"


def partner(config: Config, run: str) -> str | None:
    """The run an ablation or sensitivity run is compared with: same model, data and algorithm, LIE on."""
    spec = config.experiments[run]
    for name, other in config.experiments.items():
        if name != run and _same_start(other, spec) and other.lie == "on" and other.parent is None:
            if other.group is None:
                return name
    return None


def _same_start(one: Experiment, other: Experiment) -> bool:
    """Same model, data and algorithm."""
    return (one.model, one.data, one.algorithm) == (other.model, other.data, other.algorithm)


def baseline_of(config: Config, run: str) -> str | None:
    """The run a LIE run is compared with: same model, data and algorithm, LIE off (first stages only)."""
    return settings.baseline_of(config, run)


def table_keys(config: Config, keys: list[str]) -> dict[str, list[str]]:
    """Every table that gets a row: its keys, base models first (as the paper's Table 1), then the runs
    in ``keys`` order."""
    tables: dict[str, list[str]] = {name: [] for name in TABLES}
    runs = config.experiments
    for key in sorted(keys, key=lambda k: k in runs):  # stable: bases, then runs, each in keys order
        tables[group_of(config, key)].append(key)
    for name in ("ablation", "sensitivity"):
        for run in list(tables[name]):
            ref = partner(config, run)
            if ref in keys and ref not in tables[name]:
                tables[name].insert(tables[name].index(run), ref)
    return {name: rows for name, rows in tables.items() if rows}


def tables_of(config: Config) -> list[str]:
    """The tables the report writes for ``config`` (a pure function of the config)."""
    return list(table_keys(config, evaluated_keys(config)))
