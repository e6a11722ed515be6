"""YAML reading with keys written once and errors that name the line; reward knobs from a file and ``--set``."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from lie.core.errors import LieError


@functools.cache
def _unique_key_loader() -> type:
    """PyYAML's safe loader, except that a key written twice in one mapping is an error.

    PyYAML keeps the last value silently, so a config with ``lr`` twice would train with one of
    them unnoticed. Merge keys (``<<: *anchor``) may still be overridden, as YAML intends.
    """
    import yaml

    class UniqueKeyLoader(yaml.SafeLoader):
        def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
            seen: dict[Any, Any] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=deep)
                try:
                    first = seen.setdefault(key, key_node.start_mark)
                except TypeError:  # an unhashable key: the base class says so
                    continue
                if first is not key_node.start_mark:
                    raise yaml.constructor.ConstructorError(
                        None,
                        None,
                        f"key {key!r} appears twice (first on line {first.line + 1})",
                        key_node.start_mark,
                    )
            return super().construct_mapping(node, deep=deep)

    return UniqueKeyLoader


def load_yaml(text: str, where: str) -> Any:
    """YAML text with unique keys; a mistake is one LieError line naming ``where`` and the line."""
    import yaml

    try:
        return yaml.load(text, Loader=_unique_key_loader())  # noqa: S506 (a SafeLoader subclass)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise LieError(f"{where}{line}: not valid YAML: {problem}") from None


def load_yaml_mapping(path: str | Path, section: str | None = None, what: str = "") -> dict[str, Any]:
    """A YAML mapping from ``path``; with ``section``, that key's mapping if the file has it.

    ``what`` names the file in errors ("cannot read the judge prompt <path>: ...").
    """
    label = f"{what} {path}" if what else str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise LieError(f"cannot read {label}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise LieError(f"{label}: not valid UTF-8 (byte {exc.start + 1}); save the file as UTF-8") from None
    data = load_yaml(text, str(path))
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise LieError(f"{path}: expected a mapping at the top level, got {type(data).__name__}")
    if section is not None and isinstance(data.get(section), dict):
        return dict(data[section])
    return data


def reward_config(config_path: str | None, sets: dict[str, Any] | None):
    """The reward knobs: defaults, then the YAML file (flat or under ``reward:``), then ``--set`` pairs."""
    from lie.core.reward import RewardConfig

    values: dict[str, Any] = {}
    source = "reward config"
    if config_path:
        values.update(load_yaml_mapping(config_path, section="reward"))
        source = str(config_path)
    overrides = dict(sets or {})
    if overrides:
        values.update(overrides)
        source = f"{source} with --set" if config_path else "--set"
    return RewardConfig.from_mapping(values, source=source)
