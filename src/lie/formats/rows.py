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
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lie.core.errors import LieError
from lie.formats.jsonl import atomic_output
from lie.formats.prompts import render_question

if TYPE_CHECKING:
    import pyarrow as pa

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

# Each field by its Arrow type's name: pyarrow is imported where a table is built or read, so that the row
# readers of the reward (check_row, answer_of) and whoever imports them load without it.
REWARD_FIELDS = (("ground_truth", "string"), ("style", "string"))
EXTRA_FIELDS = (
    ("index", "int64"),
    ("split", "string"),
    ("kind", "string"),
    ("question", "string"),
    ("letters", "list<string>"),
    ("choices", "list<string>"),
    ("source_id", "string"),
)
# Added by lie reflen.
REFLEN_REWARD_FIELDS = (("num_tokens", "int64"),)
REFLEN_EXTRA_FIELDS = (
    ("avg_response_len", "float64"),
    ("gen_count", "int64"),
    ("ori_acc", "float64"),
)


def arrow_fields(fields: Sequence[tuple[str, str]]) -> list[pa.Field]:
    """The Arrow fields of ``(name, type name)`` pairs such as :data:`REFLEN_EXTRA_FIELDS`."""
    import pyarrow as pa

    types = {
        "string": pa.string(),
        "int64": pa.int64(),
        "float64": pa.float64(),
        "list<string>": pa.list_(pa.string()),
    }
    return [pa.field(name, types[kind]) for name, kind in fields]


def row_schema(reflen: bool = False) -> pa.Schema:
    import pyarrow as pa

    reward = REWARD_FIELDS + (REFLEN_REWARD_FIELDS if reflen else ())
    extra = EXTRA_FIELDS + (REFLEN_EXTRA_FIELDS if reflen else ())
    return pa.schema(
        [
            ("data_source", pa.string()),
            ("prompt", pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))),
            ("ability", pa.string()),
            ("reward_model", pa.struct(arrow_fields(reward))),
            ("extra_info", pa.struct(arrow_fields(extra))),
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
    import pyarrow as pa

    return with_metadata(pa.Table.from_pylist(rows, schema=schema or row_schema()), metadata)


def with_metadata(table: pa.Table, metadata: dict[str, Any]) -> pa.Table:
    """``table`` carrying ``metadata`` (JSON under the ``lie`` key) and no other schema metadata."""
    return table.replace_schema_metadata({METADATA_KEY: json.dumps(metadata, sort_keys=True).encode()})


def write_table(table: pa.Table, out: str | Path) -> None:
    """Write ``table`` to ``out`` atomically (a temporary file renamed into place on success)."""
    import pyarrow.parquet as pq

    with atomic_output(out, "wb") as handle:
        pq.write_table(table, handle)


def row_count(path: str | Path) -> int:
    """The rows of a parquet file, from its footer alone (one line if it is not parquet)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return pq.read_metadata(path).num_rows
    except (OSError, pa.ArrowInvalid) as exc:
        raise LieError(f"cannot read {path} as parquet ({exc})") from None


def read_metadata(path: str | Path) -> dict[str, Any]:
    """The provenance ``lie data`` / ``lie reflen`` recorded in a parquet file ({} if none)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        meta = pq.read_schema(path).metadata or {}
    except (OSError, pa.ArrowInvalid) as exc:
        raise LieError(f"cannot read {path} as parquet ({exc})") from None
    raw = meta.get(METADATA_KEY)
    return json.loads(raw) if raw else {}


# --- reading: the one reader of verl rows, with the same checks for every stage and engine ---

BUILD_HINT = "build the file with `lie data` (or `lie reflen` for training)"


def read_table(
    path: str | Path, columns: Sequence[str] = ("prompt", "reward_model"), only: bool = False
) -> pa.Table:
    """The parquet file of verl rows at ``path``, refused in one line if it cannot be read or lacks
    one of ``columns``; all its columns, or with ``only`` just ``columns``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    check_columns(path, columns)
    try:
        return pq.read_table(path, columns=list(columns) if only else None)
    except (OSError, pa.ArrowInvalid) as exc:
        raise LieError(f"cannot read {path} as parquet ({exc})") from None


def check_columns(path: str | Path, columns: Sequence[str]) -> None:
    """``path`` is a parquet file with ``columns`` (its schema alone is read), else a one-line LieError."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        names = pq.read_schema(path).names
    except (OSError, pa.ArrowInvalid) as exc:
        raise LieError(f"cannot read {path} as parquet ({exc})") from None
    missing = [c for c in columns if c not in names]
    if missing:
        raise LieError(f"{path}: column {', '.join(repr(c) for c in missing)} is missing; {BUILD_HINT}")


def read_rows(
    path: str | Path,
    columns: Sequence[str] = ("prompt", "reward_model"),
    limit: int | None = None,
    only: bool = False,
) -> list[dict[str, Any]]:
    """The rows of a verl parquet file, each checked (:func:`check_row`) for ``columns``: a bad row
    stops the run with one line naming the file, the row and the key. ``limit``: the first rows
    only; ``only``: read just ``columns``."""
    return read_checked(path, columns, limit, only)[1]


def read_checked(
    path: str | Path,
    columns: Sequence[str] = ("prompt", "reward_model"),
    limit: int | None = None,
    only: bool = False,
) -> tuple[pa.Table, list[dict[str, Any]]]:
    """:func:`read_rows` with the table they came from, for a stage that writes the table back with
    columns added (``lie reflen``)."""
    table = read_table(path, columns, only)
    if limit is not None:
        if limit < 1:
            raise LieError(f"--limit must be >= 1, got {limit}")
        table = table.slice(0, limit)
    rows = table.to_pylist()
    for number, row in enumerate(rows):
        check_row(row, f"{path} row {number}", columns)
    return table, rows


def check_row(row: Any, where: str, columns: Sequence[str] = ("prompt", "reward_model")) -> dict[str, Any]:
    """``row`` if its ``columns`` have the shape of verl rows, else a LieError naming ``where`` and the key.

    ``prompt``: a non-empty list of ``{role, content}`` messages with non-empty strings;
    ``reward_model``: ``ground_truth`` a non-empty string, ``num_tokens`` (if any) a positive integer;
    ``extra_info``: a mapping whose ``kind``, ``letters`` and ``choices`` (if any) are well typed, and a
    choice row (:func:`row_kind`) has its letters; ``data_source``: a non-empty string.
    """
    if not isinstance(row, dict):
        raise LieError(f"{where}: a row must be a mapping, got {type(row).__name__}")
    if "prompt" in columns:
        prompt_messages(row, where)
    if "reward_model" in columns:
        ground_truth(row, where)
        reference_length_of(row, where)
    if "extra_info" in columns:
        _choice_fields(row, where)
    if "data_source" in columns:
        source = row.get("data_source")
        if not isinstance(source, str) or not source:
            raise LieError(f"{where}: field 'data_source' must be a non-empty string, got {source!r:.80}")
    return row


def _bad(where: str, key: str, expected: str, value: Any) -> LieError:
    if value is None:
        return LieError(f"{where}: field '{key}' is missing (expected {expected}); {BUILD_HINT}")
    return LieError(
        f"{where}: field '{key}' must be {expected}, got {type(value).__name__} {value!r:.60}; {BUILD_HINT}"
    )


def prompt_messages(row: dict[str, Any], where: str) -> list[dict[str, str]]:
    """The row's chat messages ``[{role, content}]``, each a non-empty string."""
    prompt = row.get("prompt")
    if not isinstance(prompt, list) or not prompt:
        raise _bad(where, "prompt", "a non-empty list of chat messages {role, content}", prompt)
    messages = []
    for i, message in enumerate(prompt):
        if not isinstance(message, dict):
            raise _bad(where, f"prompt[{i}]", "a chat message {role, content}", message)
        for key in ("role", "content"):
            value = message.get(key)
            if not isinstance(value, str) or not value.strip():
                raise _bad(where, f"prompt[{i}].{key}", "a non-empty string", value)
        messages.append({"role": message["role"], "content": message["content"]})
    return messages


def _mapping(row: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    value = row.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _bad(where, key, "a mapping", value)
    return value


def ground_truth(row: dict[str, Any], where: str) -> str:
    """``reward_model.ground_truth``: a non-empty string (a number is read as its text)."""
    gold = _mapping(row, "reward_model", where).get("ground_truth")
    if isinstance(gold, bool) or not isinstance(gold, (str, int, float)) or str(gold).strip() == "":
        raise _bad(where, "reward_model.ground_truth", "a non-empty string", gold)
    return str(gold)


def reference_length_of(row: dict[str, Any], where: str) -> int | None:
    """``reward_model.num_tokens`` (``L_ref``, written by ``lie reflen``), or None if the row has none."""
    ref = _mapping(row, "reward_model", where).get("num_tokens")
    if ref is None:
        return None
    if isinstance(ref, bool) or not isinstance(ref, numbers.Integral) or ref < 1:
        raise _bad(where, "reward_model.num_tokens", "a positive integer", ref)
    return int(ref)


def _extra(row: dict[str, Any], where: str) -> dict[str, Any]:
    extra = _mapping(row, "extra_info", where)
    kind = extra.get("kind")
    if kind is not None and kind not in ("math", "choice"):
        raise _bad(where, "extra_info.kind", "math or choice", kind)
    letters, choices = extra.get("letters"), extra.get("choices")
    if letters is not None and (
        not isinstance(letters, list) or not all(isinstance(x, str) and x.strip() for x in letters)
    ):
        raise _bad(where, "extra_info.letters", "a list of option letters", letters)
    if choices is not None and (
        not isinstance(choices, list) or not all(isinstance(x, str) for x in choices)
    ):
        raise _bad(where, "extra_info.choices", "a list of option texts", choices)
    return extra


@dataclass(frozen=True)
class Answer:
    """What a row grades a response against: its gold answer, its kind and, for a choice row, the
    option letters and texts (``extra_info.letters``, ``.choices``); ``L_ref`` if ``lie reflen`` ran."""

    gold: str
    kind: str = "math"
    letters: tuple[str, ...] = ()
    options: tuple[str, ...] = ()
    ref_len: int | None = None


def answer_of(row: dict[str, Any], where: str) -> Answer:
    """The row's :class:`Answer`; a choice row without letters, or whose option texts do not match
    its letters one to one, is refused."""
    kind, letters, options = _choice_fields(row, where)
    gold = ground_truth(row, where)
    if kind == "choice" and gold.strip().upper() not in [x.strip().upper() for x in letters]:
        raise LieError(
            f"{where}: field 'reward_model.ground_truth' {gold!r} is not one of the row's letters "
            f"{list(letters)}; {BUILD_HINT}"
        )
    return Answer(gold, kind, letters, options, reference_length_of(row, where))


def _choice_fields(row: dict[str, Any], where: str) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """The row's kind, and for a choice row its letters and option texts (empty for a math row)."""
    extra = _extra(row, where)
    kind = row_kind(row)
    letters = tuple(extra.get("letters") or ())
    options = tuple(extra.get("choices") or ())
    if kind == "choice":
        if not letters:
            raise LieError(
                f"{where}: a choice item needs field 'extra_info.letters' (e.g. [A, B, C, D]); {BUILD_HINT}"
            )
        if options and len(options) != len(letters):
            raise LieError(
                f"{where}: field 'extra_info.choices' holds {len(options)} option texts for the "
                f"{len(letters)} letters {list(letters)}; {BUILD_HINT}"
            )
        return kind, letters, options
    return kind, (), ()
