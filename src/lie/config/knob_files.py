"""The schema's ``training:`` and ``algorithms:`` parts and docs/configuration.md's table of knobs,
derived from the knobs' declarations (``lie.config.settings.RunSettings``, ``lie.config.knob``).

``python -m lie.config.knob_files`` rewrites both marked parts from the declarations;
``python -m lie.config.knob_files --check`` (and ``tests/test_config_knobs.py``) fails, naming the file,
where one of them is not what the declarations give: a knob added, changed or removed in one place only.
Snakemake validates with the schema file itself (``workflow/schemas/config.schema.yaml``), so the schema's
part is written into the file, not built at run time.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Any

from lie.config.knob import declaration, declared, optional, run_schema_of, schema_of
from lie.config.sections import CHECKOUT
from lie.config.settings import RunSettings
from lie.config.yamlio import SCHEMA

DOCS = CHECKOUT / "docs" / "configuration.md"
COMMAND = "python -m lie.config.knob_files"
SCHEMA_MARKS = (
    f"  # generated from the fields of lie.config.settings.RunSettings by `{COMMAND}`: edit them there\n",
    "  # end of the generated part\n",
)
RUN_MARKS = (  # in experiments.<run>: a run's own values of the per_run knobs
    "        # generated: the knobs a run may set itself (per_run), by the same command\n",
    "        # end of the generated keys\n",
)
DOCS_MARKS = (
    f"<!-- generated from the fields of lie.config.settings.RunSettings by `{COMMAND}`: edit them there -->\n",
    "<!-- end of the generated table -->\n",
)
TRAINING_HELP = (
    "SPEC 2's shared settings of every run (a run may set its own value of some: experiments.<run>). A knob "
    "with a default may be left out."
)


def _sections(cls: type) -> dict[str, Any]:
    """The schema's ``training:`` and ``algorithms:`` mappings of ``cls``'s knobs."""
    parts: dict[str, dict[str, Any]] = {"training": {}, "algorithms": {}}
    required: dict[str, list[str]] = {"training": [], "algorithms": []}
    for f in declared(cls):
        section = declaration(f).section
        parts[section][f.name] = schema_of(f)
        if not optional(f):
            required[section].append(f.name)

    def entry(section: str) -> dict[str, Any]:
        return {
            "type": "object",
            "additionalProperties": False,
            "required": required[section],
            "properties": parts[section],
        }

    algorithm = entry("algorithms")
    return {
        "training": {"description": TRAINING_HELP, **entry("training")},
        "algorithms": {
            "type": "object",
            "minProperties": 1,
            "propertyNames": {"$ref": "#/$defs/name"},
            "additionalProperties": algorithm,
        },
    }


def _dump(value: Any) -> str:
    """YAML as the schema writes it: mappings as blocks, lists on one line."""
    import yaml

    class Dumper(yaml.SafeDumper):
        def ignore_aliases(self, data: Any) -> bool:
            return True

    def flow_list(dumper: yaml.SafeDumper, data: list[Any]) -> Any:
        return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=True)

    def text(dumper: yaml.SafeDumper, data: str) -> Any:  # a long sentence folded, a short one quoted
        style = (">" if len(data) > 80 else '"') if " " in data else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)

    Dumper.add_representer(list, flow_list)
    Dumper.add_representer(str, text)
    return yaml.dump(value, Dumper=Dumper, sort_keys=False, width=110, allow_unicode=True)


def _indented(value: Any, indent: int) -> str:
    return "".join(f"{' ' * indent}{line}\n" for line in _dump(value).splitlines())


def schema_part(cls: type = RunSettings) -> str:
    """The schema's generated part (indented under ``properties:``)."""
    return _indented(_sections(cls), 2)


def run_part(cls: type = RunSettings) -> str:
    """The schema's keys of ``experiments.<run>`` that are a run's own values of its ``per_run`` knobs."""
    return _indented({f.name: run_schema_of(f) for f in declared(cls) if declaration(f).per_run}, 8)


def _type(f: dataclasses.Field[Any]) -> str:
    k = declaration(f)
    if k.schema is not None:
        return " \\| ".join(str(o.get("const", o.get("type"))) for o in k.schema.get("oneOf", []))
    if k.choices:
        return ("list of " if str(f.type).startswith("tuple") else "") + " \\| ".join(k.choices)
    names = {"int": "integer", "float": "number", "bool": "true or false", "str": "text",
             "int | None": "integer or null", "tuple[str, ...]": "list of names"}  # fmt: skip
    return names[str(f.type)]


def _bounds(f: dataclasses.Field[Any]) -> str:
    k = declaration(f)
    low = min((o["minimum"] for o in (k.schema or {}).get("oneOf", []) if "minimum" in o), default=k.minimum)
    rules = [(">=", low), (">", k.exclusive_minimum), ("<=", k.maximum)]
    return ", ".join(f"{op} {value:,}" for op, value in rules if value is not None)


def _default(f: dataclasses.Field[Any]) -> str:
    if not optional(f):
        return "required"
    value = f.default
    return "null" if value is None else str(value).lower() if isinstance(value, bool) else str(value)


def docs_table(cls: type = RunSettings) -> str:
    """docs/configuration.md's table: one row a knob."""
    rows = ["| key | section | value | bounds | default | what it sets |", "|---|---|---|---|---|---|"]
    for f in declared(cls):
        k = declaration(f)
        where = "training" if k.section == "training" else "algorithms.<name>"
        where += ", experiments.<run>" if k.per_run else ""
        help_text = k.help.replace("|", "\\|")
        rows.append(f"| `{f.name}` | {where} | {_type(f)} | {_bounds(f)} | {_default(f)} | {help_text} |")
    return "\n".join(rows) + "\n"


def _replaced(text: str, marks: tuple[str, str], part: str, where: Path) -> str:
    """``text`` with what lies between its two ``marks`` lines replaced by ``part``."""
    start, end = marks
    if text.count(start) != 1 or text.count(end) != 1 or text.index(start) > text.index(end):
        raise ValueError(f"{where}: expected one pair of marks around the generated part ({start.strip()})")
    head, rest = text.split(start)
    _, tail = rest.split(end)
    return f"{head}{start}{part}{end}{tail}"


def rendered(cls: type = RunSettings, schema: Path = SCHEMA, docs: Path = DOCS) -> dict[Path, str]:
    """Each file's text with its generated part as ``cls``'s knobs give it."""
    text = _replaced(schema.read_text(encoding="utf-8"), SCHEMA_MARKS, schema_part(cls), schema)
    return {
        schema: _replaced(text, RUN_MARKS, run_part(cls), schema),
        docs: _replaced(docs.read_text(encoding="utf-8"), DOCS_MARKS, docs_table(cls), docs),
    }


def stale(cls: type = RunSettings, schema: Path = SCHEMA, docs: Path = DOCS) -> list[Path]:
    """The files whose generated part is not what ``cls``'s knobs give."""
    return [
        path for path, text in rendered(cls, schema, docs).items() if path.read_text(encoding="utf-8") != text
    ]


def write(cls: type = RunSettings, schema: Path = SCHEMA, docs: Path = DOCS) -> list[Path]:
    """Rewrite the generated parts; the files that changed."""
    changed = stale(cls, schema, docs)
    for path, text in rendered(cls, schema, docs).items():
        if path in changed:
            path.write_text(text, encoding="utf-8")
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a part is stale")
    args = parser.parse_args(argv)
    paths = stale() if args.check else write()
    verb = "is not what the knobs' declarations give" if args.check else "rewritten"
    for path in paths:
        print(f"{path}: {verb}", file=sys.stderr)
    return 1 if args.check and paths else 0


if __name__ == "__main__":
    sys.exit(main())
