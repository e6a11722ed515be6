"""The pipeline's configuration (``config.yaml``): loading, validation and the views stages need.

One source of truth: every ``lie`` command that needs a setting takes ``--config FILE`` and a name
(a run, a data set, a model) and reads the rest from here; the Snakemake rules pass the same file.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from lie.errors import LieError

SCHEMA = Path(__file__).with_name("schemas") / "config.schema.yaml"
LIE_MODES = ("on", "off", "length-only")


def load_config(path: str | Path, validate: bool = True) -> dict[str, Any]:
    """Read ``path`` (YAML), check it against the schema, and return it as a dict."""
    from lie.overrides import load_yaml_mapping

    config = load_yaml_mapping(path)
    if validate:
        validate_config(config, source=str(path))
    return config


def validate_config(config: dict[str, Any], source: str = "config") -> None:
    """Schema check (the same file Snakemake validates with), then cross-references."""
    if SCHEMA.exists():
        import jsonschema
        import yaml

        schema = yaml.safe_load(SCHEMA.read_text(encoding="utf-8"))
        validator = jsonschema.Draft202012Validator(schema)
        errors = sorted(validator.iter_errors(config), key=lambda e: list(e.absolute_path))
        if errors:
            first = errors[0]
            where = ".".join(str(p) for p in first.absolute_path) or "(top level)"
            raise LieError(f"{source}: key '{where}': {first.message}")
    _check_references(config, source)


def _check_references(config: dict[str, Any], source: str) -> None:
    experiments = config.get("experiments") or {}
    models = config.get("models") or {}
    train_sets = (config.get("datasets") or {}).get("train") or {}
    algorithms = config.get("algorithms") or {}
    for name, run in experiments.items():
        for key, table in (("model", models), ("data", train_sets), ("algorithm", algorithms)):
            if run.get(key) not in table:
                raise LieError(
                    f"{source}: experiments.{name}.{key} is {run.get(key)!r}, not one of {sorted(table)}"
                )
        parent = run.get("parent")
        if parent is not None and parent not in experiments:
            raise LieError(f"{source}: experiments.{name}.parent {parent!r} is not an experiment")
    for name in config.get("runs") or []:
        if name not in experiments:
            raise LieError(f"{source}: runs names {name!r}, which is not in experiments")


def selected_runs(config: dict[str, Any]) -> list[str]:
    """The runs to build: ``runs`` when given, else every experiment; parents come along."""
    experiments = config.get("experiments") or {}
    chosen = list(config.get("runs") or experiments)
    out: list[str] = []
    for name in chosen:
        chain = []
        while name is not None and name not in out and name not in chain:
            chain.append(name)
            name = experiment(config, name).get("parent")
        out.extend(reversed(chain))
    return out


def experiment(config: dict[str, Any], run: str) -> dict[str, Any]:
    experiments = config.get("experiments") or {}
    if run not in experiments:
        raise LieError(f"run {run!r} is not in experiments; known runs: {', '.join(experiments)}")
    return experiments[run]


def run_settings(config: dict[str, Any], run: str) -> dict[str, Any]:
    """Everything a training run needs: shared settings, its algorithm, then its own keys."""
    spec = experiment(config, run)
    settings = copy.deepcopy(config.get("training") or {})
    settings.update(copy.deepcopy(config["algorithms"][spec["algorithm"]]))
    for key, value in spec.items():
        if value is not None or key not in settings:
            settings[key] = value
    settings["run"] = run
    return settings


def reward_settings(config: dict[str, Any], run: str) -> dict[str, Any]:
    """The ``lie.reward.RewardConfig`` keys of a run: shared knobs, its LIE mode, its extra tokens."""
    spec = experiment(config, run)
    mode = spec.get("lie", "off")
    if mode not in LIE_MODES:
        raise LieError(f"experiments.{run}.lie must be one of {LIE_MODES}, got {mode!r}")
    knobs = dict(config.get("reward") or {})
    knobs["extra_tokens"] = int(spec.get("extra_tokens") or 0)
    knobs["length_term"] = mode in ("on", "length-only")
    knobs["redundancy_term"] = mode == "on"
    return knobs


def model_entry(config: dict[str, Any], name: str) -> dict[str, Any]:
    models = config.get("models") or {}
    if name not in models:
        raise LieError(f"model {name!r} is not in models; known: {', '.join(models)}")
    return models[name]


def dataset_entry(config: dict[str, Any], name: str) -> tuple[str, dict[str, Any]]:
    """``(group, entry)`` for a data set name, group ``train`` or ``eval``."""
    datasets = config.get("datasets") or {}
    for group in ("train", "eval"):
        if name in (datasets.get(group) or {}):
            return group, datasets[group][name]
    known = [n for g in ("train", "eval") for n in (datasets.get(g) or {})]
    raise LieError(f"data set {name!r} is not in datasets; known: {', '.join(known)}")


def outdir(config: dict[str, Any]) -> Path:
    return Path(config.get("outdir") or f"results/{config.get('name', 'default')}")
