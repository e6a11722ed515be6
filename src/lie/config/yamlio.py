"""YAML reading with keys written once and errors that name the line; reward knobs from a file and ``--set``.

A YAML file is a bounded thing before anything walks it: nesting at most :data:`MAX_DEPTH` levels
(deeper would exhaust Python's stack; libyaml's parser, used where PyYAML has it, stops at 1,000 itself), at most :data:`MAX_NODES` values once every alias is
expanded (a kilobyte of nested aliases, "billion laughs", expands to billions), no recursive alias,
integers of at most :data:`MAX_INT_DIGITS` digits, and no lone surrogate (``"\\ud800"``, which no
file or terminal can encode). Each is a LieError naming the line. The file itself is a regular file of
at most :data:`MAX_FILE_BYTES` (``/dev/zero``, ``/dev/urandom`` or a FIFO would be read without end).
"""

from __future__ import annotations

import functools
import math
from pathlib import Path
from typing import Any

from lie.core.errors import LieError
from lie.core.reward import RewardConfig
from lie.formats.jsonl import read_bounded

SCHEMA = Path(__file__).with_name("schema.yaml")  # the config's schema (lie.config.load checks with it)

MAX_DEPTH = 64
NESTED = f"nested deeper than {MAX_DEPTH} levels"
MAX_NODES = 200_000
MAX_INT_DIGITS = 100
MAX_FILE_BYTES = 16 << 20  # a config or pattern file is kilobytes; /dev/zero and FIFOs are refused first
_INT_TAG = "tag:yaml.org,2002:int"


def _scalar_problem(node: Any) -> str | None:
    value = node.value
    if any(0xD800 <= ord(c) <= 0xDFFF for c in value):
        return "a lone surrogate (\\ud800-\\udfff) is not text"
    if node.tag == _INT_TAG and sum(c.isdigit() for c in value) > MAX_INT_DIGITS:
        return f"an integer of more than {MAX_INT_DIGITS} digits"
    return None


def _children(node: Any) -> list[Any]:
    if isinstance(node.value, list):
        return [c for item in node.value for c in (item if isinstance(item, tuple) else (item,))]
    return []


def check_nodes(root: Any) -> None:
    """The composed document, aliases expanded only by count (never walked twice): bounded, no bad scalar."""
    import yaml

    def stop(message: str, node: Any) -> None:
        raise yaml.constructor.ConstructorError(None, None, message, node.start_mark)

    sizes: dict[int, int] = {}
    ancestors: set[int] = set()
    stack: list[tuple[Any, bool, int]] = [(root, False, 1)]
    while stack:
        node, finished, depth = stack.pop()
        key = id(node)
        if finished:
            ancestors.discard(key)
            sizes[key] = 1 + sum(sizes[id(c)] for c in _children(node))
            if sizes[key] > MAX_NODES:
                stop(f"more than {MAX_NODES} values once its aliases are expanded", node)
            continue
        if key in sizes:
            continue
        if key in ancestors:
            stop("an alias refers to a value that contains it (a recursive alias)", node)
        if isinstance(node, yaml.ScalarNode):
            problem = _scalar_problem(node)
            if problem:
                stop(problem, node)
            sizes[key] = 1
            continue
        if depth > MAX_DEPTH:  # libyaml composes deeper than the pure-Python composer below lets through
            stop(NESTED, node)
        ancestors.add(key)
        stack.append((node, True, depth))
        stack.extend((c, False, depth + 1) for c in _children(node) if id(c) not in sizes)


@functools.cache
def _unique_key_loader() -> type:
    """PyYAML's safe loader, except that a key written twice in one mapping is an error.

    PyYAML keeps the last value silently, so a config with ``lr`` twice would train with one of
    them unnoticed. Merge keys (``<<: *anchor``) may still be overridden, as YAML intends. The
    parser is libyaml's where PyYAML was built with it (0.02 s for the schema against 0.2 s in
    Python: every command and every Snakemake start reads it); the checks are the same.
    """
    import yaml

    class UniqueKeyLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
        _depth = 0

        def compose_node(self, parent: Any, index: Any) -> Any:  # the pure-Python composer only
            self._depth += 1
            try:
                if self._depth > MAX_DEPTH:
                    mark = self.peek_event().start_mark
                    raise yaml.composer.ComposerError(None, None, NESTED, mark)
                return super().compose_node(parent, index)
            finally:
                self._depth -= 1

        def get_single_node(self) -> Any:
            node = super().get_single_node()
            if node is not None:
                check_nodes(node)
            return node

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
        if "maximum nesting depth" in problem:  # libyaml's own limit, far past ours
            problem = NESTED
        elif "invalid Unicode character escape" in problem:  # libyaml's words for "\ud800"
            problem = "an escape that is no Unicode character (a lone surrogate \\ud800-\\udfff, or past \\U0010ffff)"
        raise LieError(f"{where}{line}: not valid YAML: {problem}") from None


def load_value(text: str, where: str) -> Any:
    """A command-line value read as YAML, but ``1e-3`` unquoted is a number (YAML 1.2; PyYAML's 1.1
    reads it as text); quoted (``'0.1'``), it stays text."""
    parsed = load_yaml(text, where)
    plain = text.strip()
    if not isinstance(parsed, str) or not plain or plain[0] in "'\"":
        return parsed
    try:
        number = float(plain)
    except ValueError:
        return parsed
    return number if math.isfinite(number) else parsed


def number_within(text: str, low: float, high: float) -> float:
    """``text`` as a finite number within [low, high], else a LieError saying which."""
    try:
        value = float(text)
    except ValueError:
        raise LieError(f"expected a number in {low:g}..{high:g}, got {text!r}") from None
    if not math.isfinite(value):
        raise LieError(f"{text} is not a finite number")
    if not low <= value <= high:
        raise LieError(f"expected a number in {low:g}..{high:g}, got {text}")
    return value


def load_yaml_mapping(path: str | Path, section: str | None = None, what: str = "") -> dict[str, Any]:
    """A YAML mapping from ``path``; with ``section``, that key's mapping if the file has it.

    ``what`` names the file in errors ("cannot read the judge prompt <path>: ...").
    """
    label = f"{what} {path}" if what else str(path)
    data = read_bounded(path, MAX_FILE_BYTES, what)
    try:
        text = data.decode("utf-8")
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
    values: dict[str, Any] = {}
    source = "reward config"
    if config_path:
        values.update(load_yaml_mapping(config_path, section="reward"))
        source = str(config_path)
    overrides = dict(sets or {})
    if overrides:
        values.update(overrides)
        source = f"{source} with --set" if config_path else "--set"
    if not values:  # the defaults: no schema read (lie score starts without YAML)
        return RewardConfig.from_mapping(values, source=source)
    _quoted_numbers(overrides, source)
    knobs = RewardConfig.from_mapping(values, source=source)
    _within_bounds(knobs, set(values), source)
    return knobs


def config_schema() -> dict[str, Any]:
    """The config's schema (:data:`SCHEMA`), read."""
    return load_yaml(SCHEMA.read_text(encoding="utf-8"), str(SCHEMA))


def _reward_schema() -> dict[str, Any]:
    """The config schema's ``reward:`` properties: the bounds a config's knobs are held to."""
    return dict(config_schema()["properties"]["reward"]["properties"])


def _quoted_numbers(values: dict[str, Any], source: str) -> None:
    """A number knob given as a quoted string (``--set "eta='0.1'"``) is refused, as the config's schema
    refuses it (``--set eta=1e-3`` arrives as a number: ``lie.commands.argtypes.key_value``)."""
    schema = _reward_schema()
    for key, value in values.items():
        kind = schema.get(key, {}).get("type") if isinstance(key, str) else None
        if kind in ("number", "integer") and isinstance(value, str) and _finite_text(value):
            raise LieError(f"{source}: reward key {key!r} must be a {kind}, got the string {value!r}")


def _finite_text(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def _within_bounds(knobs: Any, keys: set[Any], source: str) -> None:
    """The knobs given (a file, ``--set``) within the config schema's bounds (``eta`` at most 0.1...)."""
    schema = _reward_schema()
    for key in sorted(k for k in keys if isinstance(k, str) and k in schema):
        value, rule = getattr(knobs, key), schema[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        low, high = rule.get("minimum"), rule.get("maximum")
        if (low is not None and value < low) or (high is not None and value > high):
            span = f"{low if low is not None else '-inf'}..{high if high is not None else 'inf'}"
            raise LieError(
                f"{source}: reward key {key!r} must lie in {span} (the config's bounds), got {value!r}"
            )
