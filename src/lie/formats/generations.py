"""Generations (``generations/<key>/<bench>.jsonl``): what ``lie generate`` writes, ``lie evaluate`` reads.

One JSON line per sample: ``bench``, ``index`` (the problem's ``extra_info.index``), ``sample``
(0..n-1), ``gold``, ``kind`` (``math`` | ``choice``), ``letters`` (choice items), optional
``options`` (option texts), ``prompt_tokens``, ``max_tokens`` (the sample's budget: max_tokens
capped at the context minus the prompt), ``seed``, ``token_ids`` (the end-of-sequence token
included when the model stopped), ``text`` (decoded without special tokens), ``num_tokens``,
``finish_reason`` (``stop`` | ``length``). :func:`generation_line` writes one; :func:`read_generations`
reads files back checked (a bad line names its file, line and field); :func:`iter_texts` streams only
what the analyses need.
"""

from __future__ import annotations

import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from lie.core.errors import LieError
from lie.formats.jsonl import read_jsonl
from lie.formats.rows import read_rows

KINDS = ("math", "choice")


@dataclass
class Generation:
    bench: str
    index: int
    sample: int
    gold: str
    kind: str
    letters: list[str]
    options: list[str]  # option texts in letter order (choice items; empty when unknown)
    token_ids: Sequence[int]  # an array of 4-byte ints: 12k MMLU-Pro samples of 32k tokens fit in memory
    text: str
    finish_reason: str | None
    where: str = ""  # file and line, for messages


def _int(obj: dict[str, Any], name: str, where: str) -> int:
    value = obj.get(name)
    if not isinstance(value, int) or isinstance(value, bool):
        raise LieError(f"{where}: field '{name}' must be an integer, got {value!r}")
    return value


def _compact(ids: list[int], where: str) -> Sequence[int]:
    try:
        compact = array.array("i", ids)
    except OverflowError:
        compact = None
    if compact is None or (compact and min(compact) < 0):
        raise LieError(f"{where}: field 'token_ids' holds an id outside 0..2^31")
    return compact


def read_options(paths: Sequence[str]) -> dict[tuple[str, int], list[str]]:
    """Option texts of the choice rows of ``lie data`` files, by (benchmark, problem index)."""
    out: dict[tuple[str, int], list[str]] = {}
    for path in paths:
        try:
            rows = read_rows(path, ("data_source", "extra_info"), only=True)
        except LieError as exc:
            raise LieError(f"--data: not a data file of `lie data`: {exc}") from None
        for row in rows:
            extra = row.get("extra_info") or {}
            choices, index = extra.get("choices"), extra.get("index")
            if choices and isinstance(index, int):
                out[(str(row["data_source"]), index)] = [str(c) for c in choices]
    return out


def _options(
    obj: dict[str, Any], table: dict[tuple[str, int], list[str]], key: tuple[str, int], where: str
) -> list[str]:
    """A choice item's option texts: the generation line's ``options``, else the data file's."""
    options = obj.get("options") or table.get(key) or []
    letters = obj.get("letters") or []
    if options and len(options) != len(letters):
        raise LieError(
            f"{where}: {len(options)} option texts for the {len(letters)} letters {letters}; the data file "
            "(--data) is not the one the generations were made from"
        )
    return [str(o) for o in options]


def read_generations(
    paths: Sequence[str], options: dict[tuple[str, int], list[str]] | None = None
) -> list[Generation]:
    """Every sample of every file, checked: a bad line names its file, line and field."""
    samples: list[Generation] = []
    seen: dict[tuple[str, int, int], str] = {}
    for path in paths:
        for lineno, obj in read_jsonl(path):
            where = f"{path} line {lineno}"
            for name in ("bench", "token_ids", "text"):
                if obj.get(name) is None:
                    raise LieError(f"{where}: missing field '{name}'")
            index, sample = _int(obj, "index", where), _int(obj, "sample", where)
            ids = obj["token_ids"]
            if not isinstance(ids, list) or not all(
                isinstance(t, int) and not isinstance(t, bool) for t in ids
            ):
                raise LieError(f"{where}: field 'token_ids' must be a list of integers")
            if obj.get("num_tokens") is not None and obj["num_tokens"] != len(ids):
                raise LieError(
                    f"{where}: field 'num_tokens' is {obj['num_tokens']} but token_ids has {len(ids)}"
                )
            if obj.get("kind") == "choice" and not obj.get("letters"):
                raise LieError(f"{where}: a choice item needs field 'letters' (its option letters)")
            kind, gold = obj.get("kind"), obj.get("gold")
            for name in ("kind", "gold"):
                if obj.get(name) is None:
                    raise LieError(f"{where}: missing field '{name}'")
            if kind not in KINDS:
                raise LieError(f"{where}: field 'kind' must be one of {KINDS}, got {kind!r}")
            if gold is None or isinstance(gold, (bool, dict, list)):
                raise LieError(f"{where}: field 'gold' must be the answer as text, got {gold!r}")
            key = (str(obj["bench"]), index, sample)
            if key in seen:
                raise LieError(f"{where}: sample {sample} of {key[0]} problem {index} is also in {seen[key]}")
            seen[key] = where
            texts = _options(obj, options or {}, key[:2], where) if kind == "choice" else []
            letters = [str(x) for x in obj.get("letters") or []] if kind == "choice" else []
            samples.append(
                Generation(key[0], index, sample, str(gold), kind, letters, texts, _compact(ids, where),
                       obj["text"], obj.get("finish_reason"), where)
            )  # fmt: skip
    if not samples:
        raise LieError(f"no generations in {', '.join(paths)}")
    return samples


def generation_line(
    bench: str, index: int, sample: int, gold: str, kind: str, letters: Sequence[str],
    prompt_tokens: int, max_tokens: int | None, seed: int | None, token_ids: Sequence[int], text: str,
    finish_reason: str,
) -> dict[str, Any]:  # fmt: skip
    """One line of a generations file."""
    line: dict[str, Any] = {"bench": bench, "index": index, "sample": sample, "gold": gold, "kind": kind}
    if kind == "choice":
        line["letters"] = list(letters)
    line.update(
        prompt_tokens=prompt_tokens, max_tokens=max_tokens, seed=seed, token_ids=list(token_ids), text=text,
        num_tokens=len(token_ids), finish_reason=finish_reason,
    )  # fmt: skip
    return line


def iter_texts(path: str, token_ids: bool = False) -> Iterator[dict[str, Any]]:
    """``bench``, ``index``, ``sample``, ``text`` (and ``token_ids``) of every line,
    streamed: the analyses' view of a generations file."""
    keys = ("bench", "index", "sample", "text") + (("token_ids",) if token_ids else ())
    for lineno, obj in read_jsonl(str(path)):
        if not isinstance(obj.get("text"), str):
            raise LieError(f"{path} line {lineno}: field 'text' must be a string; is it a generations file?")
        yield {k: obj.get(k) for k in keys}


def read_texts(path: str) -> list[dict[str, Any]]:
    return list(iter_texts(path))
