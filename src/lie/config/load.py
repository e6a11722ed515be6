"""The pipeline's configuration (``config.yaml``): loading, validation and the views stages need.

One source of truth: every ``lie`` command that needs a setting takes ``--config FILE`` and a name
(a run, a data set, a model) and reads the rest from here; the Snakemake rules pass the same file.
"""

from __future__ import annotations

import math
import re
import string
from pathlib import Path
from typing import Any

from lie.config.typed import Config
from lie.config.yamlio import SCHEMA, config_schema, load_yaml, load_yaml_mapping
from lie.core.errors import LieError
from lie.formats.jsonl import atomic_output

NAME_RULE = (
    "use letters, digits, '_', '.' and '-', starting with a letter or digit "
    "(names become file names and words of shell commands)"
)


def load_config(path: str | Path) -> Config:
    """Read ``path`` (YAML, each key once), check it whole, and return it typed and frozen."""
    config = read_config(path)
    validate_config(config, source=str(path))
    return Config.of(config, source=str(path))


def read_config(path: str | Path) -> dict[str, Any]:
    """``path`` read as a mapping, unchecked: a part of a config Snakemake merges (``validate_workflow``)."""
    return load_yaml_mapping(path)


def validate_config(config: dict[str, Any], source: str = "config") -> None:
    """The whole config, before anything runs: finite numbers, the schema, then how the parts fit.

    Snakemake's rules call this before their own schema check, so the first mistake is one line.
    """
    _check_finite(config, source)
    _check_schema(config, source)
    _check_references(config, source)
    _check_parents(config, source)
    _check_evaluation(config, source)
    _check_batches(config, source)
    _check_prompts(config, source)


def validate_workflow(config: dict[str, Any], files: list[str | Path]) -> None:
    """Snakemake's config: each file read again (its loader keeps a repeated key silently), then the whole.

    The top-level keys whose values are not the files' (set by ``snakemake --config KEY=VALUE``) are
    checked first on their own, so that a bad value there is blamed on ``--config``, not on a file.
    """
    from_files: dict[str, Any] = {}
    for path in files:
        _merge(from_files, read_config(path))
    source = " + ".join(map(str, files)) or "the Snakemake config"
    changed = [k for k in config if k not in from_files or repr(config[k]) != repr(from_files[k])]
    if changed:
        overrides = {k: config[k] for k in changed}
        _check_finite(overrides, "--config")
        _check_schema(overrides, "--config", partial=True)
        source = f"{source} with --config {', '.join(map(str, changed))}"
    validate_config(config, source=source)


def _merge(into: dict[Any, Any], other: dict[Any, Any]) -> None:
    """``other`` merged into ``into`` as Snakemake merges config files (mappings key by key)."""
    for key, value in other.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value


PROMPT_FIELDS = {"math": {"question"}, "choice": {"question", "choices"}}


def _check_prompts(config: dict[str, Any], source: str) -> None:
    """Each question template takes only its plain fields (``{question}``, ``{choices}``): an attribute,
    an index, a conversion or a format spec (``{question.x}``, ``{question:99999999999}``) would fail,
    or fill the memory, only when the first prompt is built."""
    for kind, fields in PROMPT_FIELDS.items():
        template = (config.get("prompt") or {}).get(kind)
        if not isinstance(template, str):
            continue
        try:
            parsed = list(string.Formatter().parse(template))
        except ValueError as exc:
            raise LieError(
                f"{source}: key 'prompt.{kind}': {exc}; use {{{{ }}}} for literal braces"
            ) from None
        for _, name, spec, conversion in parsed:
            if name is not None and (name not in fields or spec or conversion):
                field = (
                    "{" + name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"
                )
                raise LieError(
                    f"{source}: key 'prompt.{kind}': {field!r} is not a field the template can take "
                    f"(only {', '.join('{' + f + '}' for f in sorted(fields))}; {{{{ }}}} for literal braces)"
                )


def _check_finite(value: Any, source: str, where: str = "") -> None:
    """NaN and infinity (YAML ``.nan``, ``.inf``) pass every schema bound: refuse them everywhere; and
    lone surrogates (``--config`` values reach here without lie's YAML reader), which no file can hold."""
    if isinstance(value, float) and not math.isfinite(value):
        raise LieError(f"{source}: key '{where}': {value} is not a finite number")
    if isinstance(value, str) and any(0xD800 <= ord(c) <= 0xDFFF for c in value):
        raise LieError(f"{source}: key '{where}': a lone surrogate (\\ud800-\\udfff) is not text")
    if isinstance(value, dict):
        for key, item in value.items():
            _check_finite(item, source, f"{where}.{key}" if where else str(key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check_finite(item, source, f"{where}[{i}]")


def _end_anchored_pattern(validator: Any, pattern: str, instance: Any, schema: dict[str, Any]) -> Any:
    """JSON Schema's ``pattern`` with ``$`` read as ECMA-262 reads it, the end of the string: Python's
    ``re`` also matches it before a final newline, which would let a name ending in a newline into the
    shell commands it becomes."""
    import jsonschema

    if not validator.is_type(instance, "string"):
        return
    found = re.search(pattern, instance)
    if found is None or (pattern.endswith("$") and found.end() != len(instance)):
        yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")


def _validator(schema: dict[str, Any]) -> Any:
    """A Draft 2020-12 validator of ``schema`` whose ``pattern`` is end-anchored (above)."""
    import jsonschema

    extended = jsonschema.validators.extend(
        jsonschema.Draft202012Validator, {"pattern": _end_anchored_pattern}
    )
    return extended(schema)


def _check_schema(config: dict[str, Any], source: str, partial: bool = False) -> None:
    """The schema; ``partial``: only the keys ``config`` has (``--config`` overrides), none required."""
    if not SCHEMA.exists():
        return

    schema = config_schema()
    validator = _validator({**schema, "required": []} if partial else schema)
    errors = sorted(validator.iter_errors(config), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        first = errors[0]
        where = ".".join(str(p) for p in first.absolute_path) or "(top level)"
        message = first.message if len(first.message) <= 300 else first.message[:300] + " ..."
        if "propertyNames" in first.schema_path:
            message = f"the name {first.instance!r} is not allowed: {NAME_RULE}"
        raise LieError(f"{source}: key '{where}': {message}")


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


def _check_parents(config: dict[str, Any], source: str) -> None:
    """A chain of ``parent`` runs must end: a cycle would train nothing and loop forever."""
    experiments = config.get("experiments") or {}
    for name in experiments:
        chain = [name]
        parent = experiments[name].get("parent")
        while parent is not None:
            if parent in chain:
                cycle = " -> ".join([*chain[chain.index(parent) :], parent])
                raise LieError(f"{source}: experiments form a cycle of parents: {cycle}")
            chain.append(parent)
            parent = (experiments.get(parent) or {}).get("parent")


def _check_names(names: list[Any], table: dict[str, Any], key: str, what: str, source: str) -> None:
    for name in names:
        if name not in table:
            raise LieError(
                f"{source}: {key} names {name!r}, which is not in {what}; known: {', '.join(table)}"
            )


def _check_evaluation(config: dict[str, Any], source: str) -> None:
    """Benchmarks, base models, domain lists, validation sets and tokenizer corpora name defined things."""
    evaluation = config.get("evaluation") or {}
    datasets = config.get("datasets") or {}
    eval_sets = datasets.get("eval") or {}
    for key in ("benchmarks", "in_domain", "out_of_domain"):
        _check_names(evaluation.get(key) or [], eval_sets, f"evaluation.{key}", "datasets.eval", source)
    models = config.get("models") or {}
    _check_names(evaluation.get("base_models") or [], models, "evaluation.base_models", "models", source)
    defined = {**(datasets.get("train") or {}), **eval_sets}
    val_sets = (config.get("training") or {}).get("val_sets") or []
    _check_names(val_sets, defined, "training.val_sets", "datasets", source)
    for name, entry in models.items():
        corpus = (entry.get("tiny") or {}).get("corpus") or []
        _check_names(corpus, defined, f"models.{name}.tiny.corpus", "datasets", source)
    evaluated = {**(config.get("experiments") or {}), **models}
    by_key = list((config.get("engines") or {}).get("generate_by") or {})
    _check_names(by_key, evaluated, "engines.generate_by", "experiments or models", source)


def _check_batches(config: dict[str, Any], source: str) -> None:
    """The batch splits into whole mini-batches (TRL otherwise plans 0 generations a step and exits 0)."""
    training = config.get("training") or {}
    batch, mini = training.get("train_batch_size"), training.get("ppo_mini_batch_size")
    if not isinstance(batch, int) or not isinstance(mini, int) or mini < 1:
        return
    if mini > batch or batch % mini:
        raise LieError(
            f"{source}: training.train_batch_size ({batch}) must be a multiple of training.ppo_mini_batch_size "
            f"({mini}), and not smaller"
        )


def grading_limits(config: Config, missing: tuple[float, int] | None = None) -> tuple[float, int]:
    """The grading executor's hard limit per item and workers: ``evaluation.grade_timeout_s`` and
    ``grade_workers`` (both required by the schema, so written once, in the config); ``missing``: what a
    config without an evaluation section gets (``lie reflen`` on a training-only config), else an error."""
    if missing is not None and not config.has_evaluation:
        return missing
    return config.evaluation.grade_timeout_s, config.evaluation.grade_workers


EFFECTIVE_HEADER = (
    "# Written by lie at Snakemake's start: the config its jobs read. Edit your own config, not this file.\n"
)


def _written_by_yaml(text: str) -> bool:
    """The file is exactly what lie wrote before the header existed (PyYAML's dump, no comment): lie's own."""
    import yaml

    try:
        return text == yaml.safe_dump(load_yaml(text, "<outdir>/config.yaml"), sort_keys=False)
    except LieError:
        return False


def write_effective_config(config: Config, path: str | Path) -> None:
    """The config a Snakemake invocation runs with, as the file its jobs read (atomically, kept when equal).

    A file already there that lie did not write (no :data:`EFFECTIVE_HEADER`: the user's own config
    kept in ``outdir``) is never replaced: that is an error naming it.
    """
    import yaml

    path = Path(path)
    text = EFFECTIVE_HEADER + yaml.safe_dump(config.as_written(), sort_keys=False)
    if path.exists() or path.is_symlink():
        try:
            old = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            old = ""
        if old == text:
            return
        if not (old.startswith(EFFECTIVE_HEADER) or _written_by_yaml(old)) or path.is_symlink():
            raise LieError(
                f"{path} is not a file lie wrote (its first line is not lie's header): lie writes the "
                "config its jobs read there; move your file out of outdir (or set another outdir)"
            )
    with atomic_output(path) as out:
        out.write(text)
