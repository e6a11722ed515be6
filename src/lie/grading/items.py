"""Grading items: their checked shape and the dispatch on ``kind``.

An item is a dict: ``response`` (str), ``gold`` (str; a number is read as its text), ``kind``
(``math`` or ``choice``) and, for choice items, ``choices`` (the item's letters, e.g. A-D) and two
optional fields: ``options`` (the option texts, aligned with ``choices``: a stated value equal to
one of them names that option) and ``choice_grading`` (``robust``, the default reader of
:mod:`lie.grading.choice`, or ``authors``, the authors' script: :mod:`lie.grading.choice_authors`).
A malformed item stops the run with a message naming where it came from and the field.
"""

from __future__ import annotations

from typing import Any

from lie.core.errors import LieError
from lie.grading.choice import LETTERS, grade_choice
from lie.grading.choice_authors import grade_choice_authors
from lie.grading.mathverify import grade_math
from lie.grading.result import GradeResult

KINDS = ("math", "choice")
DEFAULT_CHOICE_GRADING = "robust"  # the one default reader: the config, stages, commands and rules ask it
CHOICE_GRADINGS = (DEFAULT_CHOICE_GRADING, "authors")


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
    grading = item.get("choice_grading")
    if grading is not None and grading not in CHOICE_GRADINGS:
        raise LieError(f"{where}: field 'choice_grading' must be one of {CHOICE_GRADINGS}, got {grading!r}")
    out = {"response": response, "gold": str(gold), "kind": kind}
    if kind == "choice":
        out["choices"] = _letters(item, where)
        if out["gold"].strip().upper() not in out["choices"]:
            raise LieError(
                f"{where}: field 'gold' {gold!r} is not one of the item's choices {out['choices']}"
            )
        out["choice_grading"] = grading or DEFAULT_CHOICE_GRADING
        if item.get("options") is not None:
            out["options"] = _options(item["options"], len(out["choices"]), where)
    return out


def _letters(item: dict[str, Any], where: str) -> list[str]:
    letters = item.get("choices")
    if not isinstance(letters, (list, tuple)) or not letters:
        raise LieError(f'{where}: a choice item needs field \'choices\', its letters (e.g. ["A", "B"])')
    upper = [str(x).strip().upper() if isinstance(x, str) else x for x in letters]
    bad = [x for x in upper if not isinstance(x, str) or len(x) != 1 or x not in LETTERS]
    if bad or len(set(upper)) != len(upper):
        raise LieError(f"{where}: field 'choices' must be distinct letters A-J, got {letters!r}")
    return upper


def _options(options: Any, count: int, where: str) -> list[str]:
    """The option texts as strings, one per letter (a number is read as its text)."""
    ok = isinstance(options, (list, tuple)) and all(
        isinstance(x, (str, int, float)) and not isinstance(x, bool) for x in options
    )
    if not ok or len(options) != count:
        raise LieError(
            f"{where}: field 'options' must be a list of {count} option texts aligned with 'choices' "
            f"(or left out), got {options!r:.200}"
        )
    return [str(x) for x in options]


def grade_item(item: dict[str, Any]) -> GradeResult:
    """Grade one item in this process: math-verify for ``math``, the item's reader for ``choice``."""
    item = check_item(item, "item")
    if item["kind"] == "math":
        return grade_math(item["response"], item["gold"])
    if item["choice_grading"] == "authors":
        return grade_choice_authors(item["response"], item["gold"], item["choices"])
    return grade_choice(item["response"], item["gold"], item["choices"], item.get("options"))
