"""verl's row format, one fixed Arrow schema, and the provenance kept in the file's metadata.

A row: ``data_source`` (the data set's name in config.yaml), ``prompt`` (one user message: the
question through the config's template), ``ability`` (``math`` | ``choice``), ``reward_model``
(``ground_truth``, ``style``; after ``lie reflen`` also ``num_tokens``) and ``extra_info``
(``index``, ``split``, ``kind``, ``question``, ``letters``, ``choices``, ``source_id``; after
``lie reflen`` also ``avg_response_len``, ``gen_count``, ``ori_acc``). Every field is present in
every row (empty lists for math items), so files of different data sets concatenate.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from lie.core.errors import LieError

LETTERS = "ABCDEFGHIJ"  # multiple-choice options, A to J (MMLU-Pro has ten)


@dataclass(frozen=True)
class Item:
    """One problem of a source, read by its format's adapter (lie.stages.data.adapters)."""

    question: str
    answer: str
    choices: tuple[str, ...] = ()
    source_id: str = ""
    prompt: str | None = None  # the source's own user message, kept verbatim (lie-authors)


METADATA_KEY = b"lie"

PROMPT_TYPE = pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))
REWARD_FIELDS = [("ground_truth", pa.string()), ("style", pa.string())]
EXTRA_FIELDS = [
    ("index", pa.int64()),
    ("split", pa.string()),
    ("kind", pa.string()),
    ("question", pa.string()),
    ("letters", pa.list_(pa.string())),
    ("choices", pa.list_(pa.string())),
    ("source_id", pa.string()),
]
# Added by lie reflen.
REFLEN_REWARD_FIELDS = [("num_tokens", pa.int64())]
REFLEN_EXTRA_FIELDS = [
    ("avg_response_len", pa.float64()),
    ("gen_count", pa.int64()),
    ("ori_acc", pa.float64()),
]


def row_schema(reflen: bool = False) -> pa.Schema:
    reward = REWARD_FIELDS + (REFLEN_REWARD_FIELDS if reflen else [])
    extra = EXTRA_FIELDS + (REFLEN_EXTRA_FIELDS if reflen else [])
    return pa.schema(
        [
            ("data_source", pa.string()),
            ("prompt", PROMPT_TYPE),
            ("ability", pa.string()),
            ("reward_model", pa.struct(reward)),
            ("extra_info", pa.struct(extra)),
        ]
    )


def row_kind(row: dict[str, Any]) -> str:
    """``math`` or ``choice``: the row's ``extra_info.kind``, else its ``ability``, else math."""
    extra = row.get("extra_info")
    kind = extra.get("kind") if isinstance(extra, dict) else None
    return kind or ("choice" if str(row.get("ability", "")).lower() == "choice" else "math")


def format_choices(choices: Sequence[str]) -> str:
    """Options as lines ``A. text`` (the ``{choices}`` field of the choice template)."""
    return "\n".join(f"{LETTERS[i]}. {text}" for i, text in enumerate(choices))


def make_row(name: str, kind: str, split: str, index: int, item: Item, template: str) -> dict[str, Any]:
    """One verl row for ``item`` of data set ``name``."""
    from lie.formats.prompts import render_question

    fields = {"choices": format_choices(item.choices)} if kind == "choice" else {}
    content = render_question(template, question=item.question, **fields)
    return {
        "data_source": name,
        "prompt": [{"role": "user", "content": content}],
        "ability": kind,
        "reward_model": {"ground_truth": item.answer, "style": "rule"},
        "extra_info": {
            "index": index,
            "split": split,
            "kind": kind,
            "question": item.question,
            "letters": list(LETTERS[: len(item.choices)]),
            "choices": list(item.choices),
            "source_id": item.source_id,
        },
    }


def to_table(
    rows: list[dict[str, Any]], metadata: dict[str, Any], schema: pa.Schema | None = None
) -> pa.Table:
    return with_metadata(pa.Table.from_pylist(rows, schema=schema or row_schema()), metadata)


def with_metadata(table: pa.Table, metadata: dict[str, Any]) -> pa.Table:
    """``table`` carrying ``metadata`` (JSON under the ``lie`` key) and no other schema metadata."""
    return table.replace_schema_metadata({METADATA_KEY: json.dumps(metadata, sort_keys=True).encode()})


def write_table(table: pa.Table, out: str | Path) -> None:
    """Write ``table`` to ``out`` atomically (a temporary file renamed into place on success)."""
    import pyarrow.parquet as pq

    from lie.formats.jsonl import atomic_output

    with atomic_output(out, "wb") as handle:
        pq.write_table(table, handle)


def read_metadata(path: str | Path) -> dict[str, Any]:
    """The provenance ``lie data`` / ``lie reflen`` recorded in a parquet file ({} if none)."""
    import pyarrow.parquet as pq

    try:
        meta = pq.read_schema(path).metadata or {}
    except (OSError, pa.ArrowInvalid) as exc:
        raise LieError(f"cannot read {path} as parquet ({exc})") from None
    raw = meta.get(METADATA_KEY)
    return json.loads(raw) if raw else {}
