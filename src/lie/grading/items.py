"""Grading items: their checked shape and the dispatch on ``kind``.

An item is a dict: ``response`` (str), ``gold`` (str; a number is read as its text), ``kind``
(``math`` or ``choice``) and, for choice items, ``choices`` (the item's letters, e.g. A-D).
A malformed item stops the run with a message naming where it came from and the field.
"""

from __future__ import annotations

from typing import Any

from lie.errors import LieError
from lie.grading.choice import LETTERS, grade_choice
from lie.grading.mathverify import grade_math
from lie.grading.result import GradeResult

KINDS = ("math", "choice")


def check_item(item: Any, where: str) -> dict[str, Any]:
    """The item in canonical form (gold as text, letters upper case), or a LieError naming ``where``."""
    if not isinstance(item, dict):
        raise LieError(f"{where}: expected an object with response, gold, kind, got {type(item).__name__}")
    for name in ("response", "gold", "kind"):
        if name not in item or item[name] is None:
            raise LieError(f"{where}: missing field '{name}'")
    response, gold, kind = item["response"], item["gold"], item["kind"]
    if not isinstance(response, str):
        raise LieError(f"{where}: field 'response' must be a string, got {type(response).__name__}")
    if isinstance(gold, bool) or not isinstance(gold, (str, int, float)):
        raise LieError(f"{where}: field 'gold' must be a string, got {type(gold).__name__}")
    if kind not in KINDS:
        raise LieError(f"{where}: field 'kind' must be one of {KINDS}, got {kind!r}")
    out = {"response": response, "gold": str(gold), "kind": kind}
    if kind == "choice":
        letters = item.get("choices")
        if not isinstance(letters, (list, tuple)) or not letters:
            raise LieError(f'{where}: a choice item needs field \'choices\', its letters (e.g. ["A", "B"])')
        upper = [str(x).strip().upper() if isinstance(x, str) else x for x in letters]
        bad = [x for x in upper if not isinstance(x, str) or len(x) != 1 or x not in LETTERS]
        if bad or len(set(upper)) != len(upper):
            raise LieError(f"{where}: field 'choices' must be distinct letters A-J, got {letters!r}")
        if out["gold"].strip().upper() not in upper:
            raise LieError(f"{where}: field 'gold' {gold!r} is not one of the item's choices {upper}")
        out["choices"] = upper
    return out


def grade_item(item: dict[str, Any]) -> GradeResult:
    """Grade one item in this process: math-verify for ``math``, letter extraction for ``choice``."""
    item = check_item(item, "item")
    if item["kind"] == "math":
        return grade_math(item["response"], item["gold"])
    return grade_choice(item["response"], item["gold"], item["choices"])
