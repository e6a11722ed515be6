"""``lie data`` for one data set: fetch, select, turn rows into verl rows, write with provenance.

The prompt of a row is the source's own (format ``lie-authors``: the authors' files, verbatim),
else the question through the config's template (``prompt.math`` / ``prompt.choice``). The bare
variant (``--bare``, for the models of ``evaluation.bare_questions``) reads the set's ``bare`` file
when it has one (the authors' Llama file, verbatim), else puts the question alone (with the
options for multiple choice) in the prompt: :data:`BARE_TEMPLATES`.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from lie import __version__
from lie.config.datasets import DatasetSpec, bare_spec
from lie.config.typed import Config
from lie.core.errors import LieError
from lie.formats.outputs import check_output_file
from lie.formats.rows import make_row, to_table, write_table
from lie.formats.sources import read_columns
from lie.stages.data.adapters import FORMATS, GPQA_SHUFFLE, Context
from lie.stages.data.compare import check_file, compare
from lie.stages.data.sources import resolve
from lie.stages.data.synthetic import synthetic_table
from lie.stages.data.tables import DRAW_METHOD, apply_filter, dedup_first, seeded_draw

log = logging.getLogger(__name__)

ROW = "__source_row"
BARE_TEMPLATES = {"math": "{question}", "choice": "{question}\n\n{choices}"}
VERBATIM = "verbatim: the source's own prompt (format lie-authors)"


def template_for(config: Config, kind: str) -> str:
    template = config.prompt.template(kind)
    if not isinstance(template, str) or "{question}" not in template:
        raise LieError(f"config: prompt.{kind} must be a template with {{question}}, got {template!r}")
    if kind == "choice" and "{choices}" not in template:
        raise LieError("config: prompt.choice must place the options with {choices}")
    return template


def dataset_spec(config: Config, name: str) -> DatasetSpec:
    """The checked entry of data set ``name``, its ``format`` one that gives rows of its ``kind``."""
    spec = config.dataset(name)
    if spec.format not in FORMATS:
        raise LieError(f"{spec.where}.format is {spec.format!r}, not one of {', '.join(sorted(FORMATS))}")
    if spec.kind != FORMATS[spec.format].kind:
        raise LieError(
            f"{spec.where}.kind is {spec.kind!r} but format {spec.format!r} gives {FORMATS[spec.format].kind!r} items"
        )
    return spec


def select_rows(spec: DatasetSpec, table: pa.Table, limit: int | None) -> tuple[pa.Table, dict[str, int]]:
    """Filter, dedup, seeded draw, limit, in that order; the row counts after each step."""
    fmt = FORMATS[spec.format]
    counts = {"read": len(table)}
    table = table.append_column(ROW, pa.array(np.arange(len(table), dtype=np.int64)))
    if spec.filter:
        table = apply_filter(table, spec.filter, spec.where)
        counts["after_filter"] = len(table)
    if spec.dedup:
        table = dedup_first(table, fmt.dedup_key(table))
        counts["after_dedup"] = len(table)
        log.info("%s: %d rows, %d after dedup on the prompt", spec.name, counts["read"], len(table))
    if spec.sample is not None:
        if spec.seed is None:  # parse_spec requires it with sample
            raise LieError(f"{spec.where}.seed is missing; a seeded draw needs its seed")
        table, _ = seeded_draw(table, spec.sample, spec.seed, spec.where)
        counts["after_sample"] = len(table)
    if limit is not None:
        table = table.slice(0, limit)
        counts["after_limit"] = len(table)
    return table, counts


def _prompted(row: dict[str, Any], item: Any, verbatim: bool) -> dict[str, Any]:
    """``row`` with the source's own prompt when it is kept verbatim."""
    if verbatim and item.prompt is not None:
        row["prompt"] = [{"role": "user", "content": item.prompt}]
    return row


def build_dataset(
    config: Config,
    name: str,
    out: str | Path,
    limit: int | None = None,
    progress: bool = True,
    bare: bool = False,
) -> dict[str, Any]:
    """Write data set ``name`` of ``config`` to ``out`` (parquet, verl rows); return its metadata.

    ``bare``: the bare-question variant (module docstring).
    """
    from tqdm import tqdm

    if limit is not None and limit < 1:
        raise LieError(f"--limit must be >= 1, got {limit}")
    spec = dataset_spec(config, name)
    if bare and spec.group != "eval":
        raise LieError(f"--bare is for evaluation sets; {name!r} is in datasets.{spec.group}")
    verbatim = FORMATS[spec.format].name == "lie-authors" and (not bare or spec.bare is not None)
    if bare:
        spec = bare_spec(spec)
    fmt = FORMATS[spec.format]
    template = BARE_TEMPLATES[spec.kind] if bare and not verbatim else template_for(config, spec.kind)
    if spec.synthetic is not None:
        table, origin = synthetic_table(spec)
    else:
        resolved = resolve(spec)
        extra_columns = [c for c in (spec.filter or {}) if c not in fmt.columns]
        table = read_columns(resolved.files, fmt.columns + tuple(extra_columns), fmt.optional, spec.where)
        origin = resolved.origin
    columns = list(table.column_names)
    table, counts = select_rows(spec, table, limit)
    split = spec.split or ("train" if spec.group == "train" else "test")
    rows: list[dict[str, Any]] = []
    skipped: list[Any] = []
    for rec in tqdm(table.to_pylist(), desc=f"{name} rows", disable=not progress, unit="row"):
        item = fmt.parse(rec, Context(spec.where, int(rec[ROW]), spec.shuffle_seed))
        if not item.question.strip() or not item.answer:
            skipped.append(int(rec[ROW]))
            continue
        rows.append(_prompted(make_row(name, spec.kind, split, len(rows), item, template), item, verbatim))
    if skipped:
        log.warning(
            "%s: skipped %d rows without a question or answer (source rows %s)",
            name,
            len(skipped),
            skipped[:10],
        )
    if not rows:
        raise LieError(f"{spec.where}: no rows left to write; check its source, filter and split")
    counts["written"] = len(rows)
    counts["skipped_empty"] = len(skipped)
    if spec.expected_rows is not None and limit is None and len(rows) != spec.expected_rows:
        log.warning("%s: %d rows written, expected_rows is %d", spec.where, len(rows), spec.expected_rows)
    metadata = {
        "lie_version": __version__,
        "dataset": name,
        "group": spec.group,
        "format": spec.format,
        "kind": spec.kind,
        "split": split,
        "source": origin,
        "template": VERBATIM if verbatim else template,
        "bare": bare,
        "columns": columns,
        "rows": counts,
        "dedup": {"key": "the prompt (first message)" if fmt.key else fmt.columns[0]} if spec.dedup else None,
        "filter": spec.filter,
        "sample": {"size": spec.sample, "seed": spec.seed, "method": DRAW_METHOD} if spec.sample else None,
        "shuffle": {"seed": spec.shuffle_seed, "method": GPQA_SHUFFLE} if spec.format == "gpqa" else None,
        "limit": limit,
    }
    write_table(to_table(rows, metadata), out)
    log.info("%s: %d rows written to %s", name, len(rows), out)
    return metadata


def build_and_compare(
    config: Config,
    name: str,
    out: str | Path,
    limit: int | None = None,
    progress: bool = True,
    bare: bool = False,
    compare_with: str | None = None,
) -> dict[str, Any] | None:
    """``lie data``: :func:`build_dataset`; with ``compare_with`` (a verl file of the same problems,
    checked before anything is written), the rows found in only one of the two files."""
    if not progress:
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()
    if compare_with:
        check_output_file(out, [compare_with])
        check_file(compare_with)
    build_dataset(config, name, out, limit=limit, progress=progress, bare=bare)
    return compare(out, compare_with) if compare_with else None
