"""Filter, dedup and a seeded draw of the columns read (lie.formats.sources), all in Arrow.

DAPO-Math-17k holds 1.8M rows and DeepMath-103K three long solutions a problem: the rows stay in
Arrow until the few thousand kept ones become Python dicts.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import pyarrow as pa

from lie.core.errors import LieError

log = logging.getLogger(__name__)

DRAW_METHOD = "numpy.random.default_rng(seed).choice(rows, size=sample, replace=False), kept in source order"


def apply_filter(table: pa.Table, rules: dict[str, Any] | None, where: str) -> pa.Table:
    """Keep rows whose columns fall in ``{min, max}`` or in a list of allowed values."""
    import pyarrow.compute as pc

    if not rules:
        return table
    mask = None
    for column, rule in rules.items():
        if column not in table.column_names:
            raise LieError(f"{where}.filter names column {column!r}, which the data set lacks")
        values = table[column]
        if isinstance(rule, list):
            keep = pc.is_in(values, value_set=pa.array(rule))
        else:
            keep = pc.is_valid(values)
            if "min" in rule:
                keep = pc.and_(keep, pc.greater_equal(values, rule["min"]))
            if "max" in rule:
                keep = pc.and_(keep, pc.less_equal(values, rule["max"]))
        keep = pc.fill_null(keep, False)
        mask = keep if mask is None else pc.and_(mask, keep)
    return table.filter(mask)


def dedup_first(table: pa.Table, key: pa.ChunkedArray | pa.Array) -> pa.Table:
    """The first row of every distinct ``key``, in source order."""
    positions = pa.array(np.arange(len(table), dtype=np.int64))
    grouped = pa.table({"k": key, "i": positions}).group_by("k", use_threads=False).aggregate([("i", "min")])
    first = np.sort(grouped["i_min"].to_numpy())
    return table.take(pa.array(first))


def seeded_draw(table: pa.Table, sample: int, seed: int, where: str) -> tuple[pa.Table, list[int]]:
    """``sample`` rows drawn without replacement with ``seed`` (see DRAW_METHOD); their positions."""
    if sample > len(table):
        raise LieError(f"{where}.sample is {sample} but only {len(table)} rows pass the filter; lower it")
    rng = np.random.default_rng(seed)
    picked = np.sort(rng.choice(len(table), size=sample, replace=False))
    return table.take(pa.array(picked)), picked.tolist()
