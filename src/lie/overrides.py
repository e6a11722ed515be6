"""Knobs from a YAML file and ``--set key=value`` pairs (command-line values win)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lie.errors import LieError


def parse_sets(items: list[str] | None) -> dict[str, str]:
    """``["a=1", "b=x"]`` -> ``{"a": "1", "b": "x"}``; a pair without '=' is an error."""
    out: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise LieError(f"--set expects key=value, got {item!r}")
        out[key.strip()] = value
    return out


def load_yaml_mapping(path: str | Path, section: str | None = None, what: str = "") -> dict[str, Any]:
    """A YAML mapping from ``path``; with ``section``, that key's mapping if the file has it.

    ``what`` names the file in errors ("cannot read the judge prompt <path>: ...").
    """
    import yaml

    label = f"{what} {path}" if what else str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise LieError(f"cannot read {label}: {exc.strerror}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise LieError(f"{path}: not valid YAML ({exc})") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise LieError(f"{path}: expected a mapping at the top level, got {type(data).__name__}")
    if section is not None and isinstance(data.get(section), dict):
        return dict(data[section])
    return data


def reward_config(config_path: str | None, sets: list[str] | None):
    """The reward knobs: defaults, then the YAML file (flat or under ``reward:``), then ``--set``."""
    from lie.reward import RewardConfig

    values: dict[str, Any] = {}
    source = "reward config"
    if config_path:
        values.update(load_yaml_mapping(config_path, section="reward"))
        source = str(config_path)
    overrides = parse_sets(sets)
    if overrides:
        values.update(overrides)
        source = f"{source} with --set" if config_path else "--set"
    return RewardConfig.from_mapping(values, source=source)
