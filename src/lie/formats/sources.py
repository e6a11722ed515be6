"""The data files a source gives (parquet, CSV, JSON lines or one JSON array), read into Arrow columns.

Every reader is bounded and strict (lie.formats.jsonl for JSON); every error names the data set's key
and the file. Filtering, dedup and the seeded draw come after (lie.stages.data.tables).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from lie.core.errors import LieError
from lie.formats.jsonl import loads_line, open_input, read_bounded, read_jsonl


def read_columns(
    files: Sequence[Path], required: Sequence[str], optional: Sequence[str], where: str
) -> pa.Table:
    """The ``required`` and present ``optional`` columns of every file, concatenated."""
    tables = [_read_one(Path(f), required, optional, where) for f in files]
    if not tables:
        raise LieError(f"{where}: no data files")
    try:
        return pa.concat_tables(tables, promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise LieError(f"{where}: the data files disagree on column types ({exc})") from None


def _finite(table: pa.Table, path: Path, where: str) -> pa.Table:
    """NaN or infinity in a number column is refused, naming the column and row: it would otherwise
    become the text "nan" (a gold answer no response can match)."""
    import pyarrow.compute as pc

    for name in table.column_names:
        column = table.column(name)
        if not pa.types.is_floating(column.type):
            continue
        bad = pc.invert(pc.fill_null(pc.is_finite(column), True))
        if pc.any(bad).as_py():
            row = pc.index(bad, True).as_py()
            value = column[row].as_py()
            raise LieError(f"{where}: {path} row {row + 1}: column {name!r} is {value}, not a finite number")
    return table


def _missing(have: Sequence[str], required: Sequence[str], path: Path, where: str) -> None:
    missing = [c for c in required if c not in have]
    if missing:
        raise LieError(
            f"{where}: column {', '.join(repr(c) for c in missing)} missing in {path} (it has "
            f"{', '.join(have)}); check the data set's source and its 'format' key"
        )


MAX_JSON_ARRAY_BYTES = 1 << 30  # a data set as one JSON array (JSON lines are bounded per line instead)


def _read_one(path: Path, required: Sequence[str], optional: Sequence[str], where: str) -> pa.Table:
    suffix = path.suffix.lower()
    try:
        open_input(path).close()  # a device, FIFO or folder never ends or never opens: one line first
    except LieError as exc:
        raise LieError(f"{where}: {exc}") from None
    try:
        if suffix == ".parquet":
            import pyarrow.parquet as pq

            names = pq.read_schema(path).names
            _missing(names, required, path, where)
            columns = list(required) + [c for c in optional if c in names and c not in required]
            return _finite(pq.read_table(path, columns=columns), path, where)
        if suffix == ".csv":
            from pyarrow import csv

            table = csv.read_csv(path, parse_options=csv.ParseOptions(newlines_in_values=True))
            _missing(table.column_names, required, path, where)
            chosen = table.select(list(required) + [c for c in optional if c in table.column_names])
            return _finite(chosen, path, where)
        if suffix in (".jsonl", ".json"):
            return _read_json(path, required, optional, where)
    except (OSError, pa.ArrowInvalid) as exc:
        raise LieError(f"{where}: cannot read {path} ({exc})") from None
    raise LieError(f"{where}: {path} is not .parquet, .jsonl, .json or .csv")


def _read_json(path: Path, required: Sequence[str], optional: Sequence[str], where: str) -> pa.Table:
    """JSON lines, or one JSON array, read by the strict reader (lie.formats.jsonl: no NaN, bounded
    numbers and depth, UTF-8 only); every error names the data set's key and the file."""
    records: list[Any]
    try:
        with open_input(path) as handle:
            first = handle.read(4096).lstrip()
        if first.startswith(b"["):
            records = loads_line(read_bounded(path, MAX_JSON_ARRAY_BYTES), str(path))
        else:
            records = [obj for _, obj in read_jsonl(str(path))]
    except LieError as exc:
        raise LieError(f"{where}: {exc}") from None
    names: list[str] = []
    for rec in records:
        if not isinstance(rec, dict):
            raise LieError(f"{where}: {path} holds a {type(rec).__name__}, expected JSON objects")
        names.extend(k for k in rec if k not in names)
    _missing(names, required, path, where)
    columns = list(required) + [c for c in optional if c in names and c not in required]
    return pa.table({c: _json_column([r.get(c) for r in records]) for c in columns})


def _json_column(values: list[Any]) -> pa.Array:
    """An Arrow column from JSON values; mixed scalar types (``27`` and ``"27"``) become strings."""
    try:
        return pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return pa.array(
            [v if v is None or isinstance(v, str) else json.dumps(v) for v in values], pa.string()
        )
