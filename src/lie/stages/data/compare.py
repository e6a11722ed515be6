"""Our built data set beside another file of the same problems (the authors'): what differs, by row.

``lie data dapo --out data/dapo.parquet --compare-with dapo-math-17k_llama-add1k.parquet``
answers "which of our 17,398 DAPO prompts are not among the authors' 17,390 rows": rows are matched
on the bare question (``extra_info.question``: the problem without any instruction, whitespace at
the ends dropped) and, where both files carry one, on the source id (DAPO's ``extra_info.index``).
The other file is read as the authors' verl rows (format ``lie-authors``).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from lie.core.errors import LieError
from lie.formats.rows import check_columns, read_rows
from lie.stages.data.adapters import FORMATS, Context

COLUMNS = ("prompt", "reward_model", "extra_info")


def _rows(path: str | Path) -> list[dict[str, Any]]:
    """The file's verl rows (``lie.formats.rows.read_rows``; a bad row is named)."""
    try:
        return read_rows(path, COLUMNS, only=True)
    except LieError as exc:
        raise LieError(f"--compare-with: {exc}") from None


def check_file(path: str | Path) -> None:
    """Before anything is written: ``path`` is a parquet file with the columns of verl's rows."""
    try:
        check_columns(path, COLUMNS)
    except LieError as exc:
        raise LieError(f"--compare-with: not a verl parquet file: {exc}") from None


def _theirs(path: str | Path) -> list[tuple[str, str, str]]:
    """(question, answer, source id) of every row of a verl file, read as the authors' rows."""
    parse = FORMATS["lie-authors"].parse
    out = []
    for i, row in enumerate(_rows(path)):
        item = parse(row, Context(str(path), i))
        out.append((item.question.strip(), item.answer, item.source_id))
    return out


def _ours(path: str | Path) -> list[tuple[str, str, str]]:
    return [
        (
            str((r["extra_info"] or {}).get("question") or "").strip(),
            r["reward_model"]["ground_truth"],
            str((r["extra_info"] or {}).get("source_id") or ""),
        )  # fmt: skip
        for r in _rows(path)
    ]


def _listed(rows: list[tuple[str, str, str]], limit: int) -> list[dict[str, str]]:
    return [
        {"source_id": sid, "answer": answer, "question": question} for question, answer, sid in rows[:limit]
    ]


def compare(ours: str | Path, theirs: str | Path, limit: int = 50) -> dict[str, Any]:
    """Counts and the rows (up to ``limit`` a side) found in one file only."""
    a, b = _ours(ours), _theirs(theirs)
    questions_a, questions_b = {q for q, _, _ in a}, {q for q, _, _ in b}
    only_a = [r for r in a if r[0] not in questions_b]
    only_b = [r for r in b if r[0] not in questions_a]
    ids_a, ids_b = {s for _, _, s in a if s}, {s for _, _, s in b if s}
    report: dict[str, Any] = {
        "ours": {"file": str(ours), "rows": len(a), "distinct_questions": len(questions_a)},
        "theirs": {"file": str(theirs), "rows": len(b), "distinct_questions": len(questions_b)},
        "repeated_questions": {
            "ours": sum(1 for n in Counter(q for q, _, _ in a).values() if n > 1),
            "theirs": sum(1 for n in Counter(q for q, _, _ in b).values() if n > 1),
        },
        "only_ours": {"count": len(only_a), "rows": _listed(only_a, limit)},
        "only_theirs": {"count": len(only_b), "rows": _listed(only_b, limit)},
    }
    if ids_a and ids_b:
        report["source_ids"] = {
            "shared": len(ids_a & ids_b),
            "only_ours": {"count": len(ids_a - ids_b), "ids": sorted(ids_a - ids_b)[:limit]},
            "only_theirs": {"count": len(ids_b - ids_a), "ids": sorted(ids_b - ids_a)[:limit]},
        }
    return report
