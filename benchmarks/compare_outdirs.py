"""Two output folders of the same config, file by file: what is identical, and where the rest differ.

Run: ``.venv/bin/python benchmarks/compare_outdirs.py BEFORE AFTER [--ignore GLOB ...]``, e.g. a
``make smoke`` at an older commit's clone against the same at main (docs/benchmarks.md). Not a speed
benchmark: the check behind "the outputs are unchanged" claims, so that anyone can repeat it.

Every file under both folders is read; the two folders' own paths (absolute, and the tail of them
both share, as a config names its outdir: ``results/smoke``) are replaced by one placeholder first,
so a path that only names the folder does not count as a difference. A file that differs is
described by what it holds:

- JSON and JSON-lines files: the keys (flattened, ``a.b[0].c``) whose values differ, with the number
  of lines that differ (lines are compared in order);
- parquet tables: the columns that differ, and the row count where it changed;
- safetensors weights: the tensors that differ and the largest absolute difference;
- other text: the number of lines that differ and the first pair;
- anything else: its sizes.

Files whose paths differ only in numbers (a metrics file named by its launch time, a rollout file by
its process id) are paired in name order when both sides hold as many. Prints one line per
differing or one-sided file, then the counts. Exit status 0 in every case.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

PLACEHOLDER = "<OUTDIR>"


def _files(root: Path, ignore: list[str]) -> dict[str, Path]:
    found = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_file() and not any(fnmatch.fnmatch(rel, g) for g in ignore):
            found[rel] = path
    return found


def _names(root: Path, other: Path) -> list[str]:
    """How files may name their folder: its absolute path, then the tail of it both folders share
    (the outdir as the config writes it, ``results/smoke``), when that tail has two parts or more."""
    mine, theirs = root.resolve().parts, other.resolve().parts
    shared = 0
    while shared < min(len(mine), len(theirs)) - 1 and mine[-1 - shared] == theirs[-1 - shared]:
        shared += 1
    tail = [str(Path(*mine[len(mine) - shared :]))] if shared >= 2 else []
    return [str(root.resolve()), *tail]


def _text(path: Path, names: list[str]) -> str:
    text = path.read_text(encoding="utf-8", errors="replace")
    for name in names:
        text = text.replace(name, PLACEHOLDER)
    return text


def _flat(value: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _flat(item, f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _flat(item, f"{prefix}[{i}]")
    else:
        yield prefix, value


def _key_diff(a: Any, b: Any) -> set[str]:
    left, right = dict(_flat(a)), dict(_flat(b))
    return {k for k in left.keys() | right.keys() if left.get(k, PLACEHOLDER) != right.get(k, PLACEHOLDER)}


def _short(keys: set[str], limit: int = 8) -> str:
    # numbered entries (lists) read as one key: losses[3].loss and losses[9].loss are losses[].loss
    names = sorted({re.sub(r"\[\d+\]", "[]", k) for k in keys})
    more = f" (+{len(names) - limit} more)" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def _describe_json(a: str, b: str) -> str:
    try:
        return "keys " + _short(_key_diff(json.loads(a), json.loads(b)))
    except json.JSONDecodeError:
        return _describe_lines(a, b)


def _describe_jsonl(a: str, b: str) -> str:
    left, right = a.splitlines(), b.splitlines()
    keys: set[str] = set()
    differing = 0
    for x, y in zip(left, right):
        if x != y:
            differing += 1
            try:
                keys |= _key_diff(json.loads(x), json.loads(y))
            except json.JSONDecodeError:
                keys.add("<not JSON>")
    count = f"{len(left)} vs {len(right)} lines, " if len(left) != len(right) else ""
    return f"{count}{differing} of {min(len(left), len(right))} lines differ; keys {_short(keys)}"


def _describe_lines(a: str, b: str) -> str:
    left, right = a.splitlines(), b.splitlines()
    pairs = [(x, y) for x, y in zip(left, right) if x != y]
    count = f"{len(left)} vs {len(right)} lines, " if len(left) != len(right) else ""
    first = f"; first: {pairs[0][0][:70]!r} -> {pairs[0][1][:70]!r}" if pairs else ""
    return f"{count}{len(pairs)} lines differ{first}"


def _describe_parquet(a: Path, b: Path) -> str:
    import pyarrow.parquet as pq

    left, right = pq.read_table(a), pq.read_table(b)
    if left.num_rows != right.num_rows:
        return f"{left.num_rows} vs {right.num_rows} rows"
    columns = sorted(set(left.column_names) | set(right.column_names))
    differing = [
        c
        for c in columns
        if c not in left.column_names or c not in right.column_names or not left[c].equals(right[c])
    ]
    return f"columns {', '.join(differing)}" if differing else "same rows (file bytes differ)"


def _describe_safetensors(a: Path, b: Path) -> str:
    from safetensors.torch import load_file

    left, right = load_file(a), load_file(b)
    names = sorted(left.keys() | right.keys())
    differing = [n for n in names if n not in left or n not in right or not left[n].equal(right[n])]
    if not differing:
        return "same tensors (file bytes differ)"
    comparable = [n for n in differing if n in left and n in right and left[n].shape == right[n].shape]
    worst = max((float((left[n].float() - right[n].float()).abs().max()) for n in comparable), default=None)
    largest = f", largest |diff| {worst:.3g}" if worst is not None else ""
    others = len(differing) - len(comparable)
    apart = f" ({others} missing on one side or of another shape)" if others else ""
    return f"{len(differing)} of {len(names)} tensors differ{largest}{apart}"


def describe(a: Path, b: Path, names_a: list[str], names_b: list[str]) -> str | None:
    """None when the two files are equal (after the folder names, :func:`_names`, are replaced),
    else how they differ."""
    if a.read_bytes() == b.read_bytes():
        return None
    suffix = a.suffix
    if suffix == ".parquet":
        return _describe_parquet(a, b)
    if suffix == ".safetensors":
        return _describe_safetensors(a, b)
    try:
        left, right = _text(a, names_a), _text(b, names_b)
    except OSError as exc:
        return f"unreadable: {exc}"
    if left == right:
        return None
    if "\x00" in left or "\x00" in right:
        return f"binary, {a.stat().st_size} vs {b.stat().st_size} bytes"
    if suffix == ".json":
        return _describe_json(left, right)
    if suffix == ".jsonl":
        return _describe_jsonl(left, right)
    return _describe_lines(left, right)


def pair_renamed(left: dict[str, Path], right: dict[str, Path]) -> list[tuple[str, str]]:
    """One-sided files whose paths differ only in numbers (a launch time, a process id), paired in
    name order where both sides hold as many of the pattern: ``metrics/launch-<time>.jsonl``."""
    groups: dict[str, tuple[list[str], list[str]]] = {}
    for side, files, other in ((0, left, right), (1, right, left)):
        for rel in files.keys() - other.keys():
            groups.setdefault(re.sub(r"\d+", "#", rel), ([], []))[side].append(rel)
    pairs = []
    for before, after in groups.values():
        if len(before) == len(after):
            pairs += zip(sorted(before), sorted(after))
    return sorted(pairs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--ignore", action="append", default=[], help="a glob of relative paths to leave out")
    args = parser.parse_args(argv)
    for folder in (args.before, args.after):
        if not folder.is_dir():
            parser.error(
                f"{folder} is not a folder: give the two outdirs to compare (e.g. results/smoke of each)"
            )
    left, right = _files(args.before, args.ignore), _files(args.after, args.ignore)
    pairs = [(rel, rel) for rel in left.keys() & right.keys()] + pair_renamed(left, right)
    paired_left, paired_right = {a for a, _ in pairs}, {b for _, b in pairs}
    names_before, names_after = _names(args.before, args.after), _names(args.after, args.before)
    same = differ = 0
    for a, b in sorted(pairs):
        what = describe(left[a], right[b], names_before, names_after)
        name = a if a == b else f"{a} -> {b}"
        if what is None:
            same += 1
        else:
            differ += 1
            print(f"differs:     {name}: {what}")
    for rel in sorted(left.keys() - paired_left):
        print(f"only before: {rel}")
    for rel in sorted(right.keys() - paired_right):
        print(f"only after:  {rel}")
    renamed = sum(a != b for a, b in pairs)
    print(
        f"{same} identical, {differ} differ, {len(left) - len(paired_left)} only before, "
        f"{len(right) - len(paired_right)} only after ({renamed} pairs matched by name pattern; "
        f"{len(left)} files before, {len(right)} after)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
