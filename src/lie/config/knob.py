"""A training knob, declared once: a field of ``lie.config.settings.RunSettings`` with :func:`knob`.

The field's type says how its value is read (:class:`Reader`, each error naming the key where the value
was written); its declaration holds its help, its bounds, its choices, the config section it is written
in and, for an optional knob, its default. The schema's part for it and the documentation's row are
derived from that declaration (:func:`schema_of`; ``lie.config.knob_files`` writes both files and a
test checks them), so a new knob is one field plus its use in an engine.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from lie.core.errors import LieError

FINAL = "final"
BEST_VAL = "best_val"
NULL = "null"


@dataclass(frozen=True)
class Knob:
    """A knob's declaration (the metadata of its field); bounds as JSON Schema states them."""

    help: str
    section: str = "training"
    minimum: float | None = None
    exclusive_minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()
    schema: Mapping[str, Any] | None = None  # the value's whole schema, where its type cannot say it
    per_run: bool = False  # a run may set its own (experiments.<run>.<key>; null there: the shared one)


def knob(help: str, *, default: Any = dataclasses.MISSING, **rules: Any) -> Any:
    """A ``RunSettings`` field that is a knob; with ``default``, the config may leave it out."""
    metadata = {"knob": Knob(help, **rules)}
    if default is dataclasses.MISSING:
        return dataclasses.field(metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def declared(cls: type) -> list[dataclasses.Field[Any]]:
    """The knob fields of a settings class, in their order."""
    return [f for f in dataclasses.fields(cls) if "knob" in f.metadata]


def declaration(f: dataclasses.Field[Any]) -> Knob:
    return f.metadata["knob"]


def optional(f: dataclasses.Field[Any]) -> bool:
    """A knob with a default: a config may leave it out."""
    return f.default is not dataclasses.MISSING


# A field's annotation (text: ``from __future__ import annotations``) -> its value's JSON Schema type.
TYPES: dict[str, Any] = {
    "int": "integer",
    "float": "number",
    "bool": "boolean",
    "str": "string",
    "int | None": ["integer", NULL],
    "tuple[str, ...]": "array",
}


def schema_of(f: dataclasses.Field[Any]) -> dict[str, Any]:
    """The JSON Schema of a knob's value, from its type and declaration (its help as the description)."""
    k = declaration(f)
    out: dict[str, Any] = {"description": k.help}
    if k.schema is not None:
        return {**out, **k.schema}
    kind = TYPES.get(str(f.type))
    if kind is None:
        raise TypeError(f"knob {f.name}: no schema type for {f.type!r}; one of {', '.join(TYPES)}")
    if kind == "array":
        items: dict[str, Any] = {"enum": list(k.choices)} if k.choices else {"type": "string"}
        out.update(type="array", items=items)
    elif k.choices:
        out["enum"] = list(k.choices)
    else:
        out["type"] = kind
    bounds = (("minimum", k.minimum), ("exclusiveMinimum", k.exclusive_minimum), ("maximum", k.maximum))
    out.update({name: value for name, value in bounds if value is not None})
    return out


def run_schema_of(f: dataclasses.Field[Any]) -> dict[str, Any]:
    """The JSON Schema of a run's own value of a ``per_run`` knob: the shared one's, or null."""
    out = {**schema_of(f), "description": f"The run's own {f.name} (null: training.{f.name})"}
    if "enum" in out:
        out["enum"] = [*out["enum"], None]
    else:
        kind = out["type"]
        out["type"] = kind if isinstance(kind, list) else [kind, NULL]
    return out


class Reader:
    """Typed reads of a run's merged keys, each error naming the key where the value was written."""

    def __init__(self, values: dict[str, Any], where: dict[str, str]):
        self.values, self.where = values, where

    def _name(self, key: str) -> str:
        return self.where.get(key, f"training.{key}")

    def bad(self, key: str, what: str) -> LieError:
        return LieError(f"config: key '{self._name(key)}': {self.values.get(key)!r} is not {what}")

    def raw(self, key: str, optional: bool = False) -> Any:
        if key not in self.values:
            if optional:
                return None
            raise LieError(f"config: key '{self._name(key)}' is missing")
        return self.values[key]

    def knob(self, f: dataclasses.Field[Any]) -> Any:
        """A knob's value by its type; an optional knob left out (or null) is its default."""
        if optional(f) and self.raw(f.name, optional=True) is None:
            return f.default
        readers: dict[str, Callable[[str], Any]] = {
            "int": self.integer,
            "float": self.number,
            "bool": self.flag,
            "str": self.text,
            "int | None": self.integer_or_none,
            "tuple[str, ...]": self.names,
        }
        read = readers.get(str(f.type))
        if read is None:
            raise TypeError(f"knob {f.name}: no reader for {f.type!r}")
        value = read(f.name)
        choices = declaration(f).choices
        if choices and any(v not in choices for v in (value if isinstance(value, tuple) else (value,))):
            raise self.bad(f.name, f"one of {choices}")
        return value

    def integer(self, key: str) -> int:
        value = self.raw(key)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.bad(key, "an integer")
        return value

    def integer_or_none(self, key: str, optional: bool = False) -> int | None:
        """An integer, or None where the key is null (or, ``optional``, absent)."""
        if self.raw(key, optional) is None:
            return None
        return self.integer(key)

    def number(self, key: str) -> float:
        value = self.raw(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.bad(key, "a number")
        return float(value)

    def flag(self, key: str) -> bool:
        value = self.raw(key)
        if not isinstance(value, bool):
            raise self.bad(key, "true or false")
        return value

    def text(self, key: str) -> str:
        value = self.raw(key)
        if not isinstance(value, str):
            raise self.bad(key, "a string")
        return value

    def text_or_none(self, key: str, optional: bool = False) -> str | None:
        """A string, or None where the key is null (or, ``optional``, absent)."""
        if self.raw(key, optional) is None:
            return None
        return self.text(key)

    def names(self, key: str) -> tuple[str, ...]:
        value = self.raw(key)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.bad(key, "a list of names")
        return tuple(value)

    def eval_step(self) -> str | int:
        value = self.raw("eval_step")
        if value in (FINAL, BEST_VAL) or (
            isinstance(value, int) and not isinstance(value, bool) and value >= 1
        ):
            return value
        raise self.bad("eval_step", f"{FINAL}, {BEST_VAL} or a step (an integer from 1)")
