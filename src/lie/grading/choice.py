"""Multiple-choice answers (A-J): the letter a response commits to, checked against the gold letter.

The authors' eval script falls back to a regular-expression letter extractor limited to A-E;
MMLU-Pro has up to ten options, so we read A-J, and only the item's own letters count. Forms, all
case-insensitive: ``\\boxed{X}`` (also ``\\boxed{(X)}``, ``\\boxed{\\text{X}}``), "the answer is
(X)", "Answer: X" (with markdown such as ``**Answer:** X``), and a last line that is only a letter
("C", "(C)", "**C.**"). The last stated answer in the text wins, so a model that changes its mind
is graded on its final word. An unbracketed lower-case letter followed by a word is a word, not an
answer ("the answer is a bit"), and so are "I" ("Answer: I think") and "A" after "Answer:"
("Answer: A careful look"); "the answer is A because" is an answer.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence

from lie.grading.result import GradeResult

LETTERS = "ABCDEFGHIJ"

_OPEN = r"[\s*_$(\[{]*"  # markdown, math and brackets before a letter
_WRAP = r"(?:\\(?:text|textbf|mathrm|mathbf)\s*\{\s*)?"
_BOXED = re.compile(r"\\boxed\s*\{\s*" + _WRAP + r"\(?\s*([A-J])\s*(?=[)}.:,\s])", re.I)
_ANSWER_IS = re.compile(
    r"\banswer\s+(?:is|would\s+be|will\s+be)\s*[:：]?"
    + _OPEN
    + r"(?:option\s+|choice\s+)?"
    + _OPEN
    + _WRAP
    + r"([A-J])(?![A-Za-z0-9])",
    re.I,
)
_ANSWER_COLON = re.compile(
    r"\banswer[*_]*\s*[:：]"
    + _OPEN
    + r"(?:option\s+|choice\s+)?"
    + _OPEN
    + _WRAP
    + r"([A-J])(?![A-Za-z0-9])",
    re.I,
)
_LAST_LINE = re.compile(r"[\s*_#>$]*(?:\\text\s*\{)?\(?([A-J])\)?[.}\s*_$]*", re.I)
_WORDLIKE = re.compile(r"[ \t]+[a-z]")


def _plausible(text: str, match: re.Match[str], words: str) -> bool:
    """False when the letter reads as a word: lower case or one of ``words``, unbracketed, then a word."""
    letter = match.group(1)
    if letter.isupper() and letter not in words:
        return True
    start = match.start(1)
    if start > 0 and text[start - 1] in "({":
        return True
    return not _WORDLIKE.match(text, match.end(1))


def find_letters(response: str) -> list[tuple[int, str]]:
    """Every stated answer letter as (position, upper-case letter), in order of position."""
    found: list[tuple[int, str]] = []
    # After "Answer:" a sentence may begin ("Answer: A careful look..."); mid-sentence only "I" is a word.
    for pattern, words in ((_BOXED, ""), (_ANSWER_IS, "I"), (_ANSWER_COLON, "AI")):
        for match in pattern.finditer(response):
            if _plausible(response, match, words):
                found.append((match.start(1), match.group(1).upper()))
    stripped = response.rstrip()
    last_start = stripped.rfind("\n") + 1
    match = _LAST_LINE.fullmatch(stripped, last_start)
    if match:
        found.append((match.start(1), match.group(1).upper()))
    return sorted(set(found))


def extract_choice(response: str, letters: Sequence[str]) -> tuple[str | None, list[str]]:
    """(the last stated letter among ``letters``, the stated letters outside them)."""
    allowed = {letter.upper() for letter in letters}
    stated = find_letters(response)
    valid = [letter for _, letter in stated if letter in allowed]
    outside = sorted({letter for _, letter in stated if letter not in allowed})
    return (valid[-1] if valid else None), outside


def grade_choice(response: str, gold: str, letters: Sequence[str]) -> GradeResult:
    """Grade a multiple-choice response: correct when its final letter is ``gold``."""
    start = time.perf_counter()
    gold_letter = str(gold).strip().upper()
    allowed = [str(letter).strip().upper() for letter in letters]
    if gold_letter not in allowed:
        return GradeResult(
            False, None, "error", time.perf_counter() - start, f"gold {gold!r} is not one of {allowed}"
        )
    pred, outside = extract_choice(response, allowed)
    seconds = time.perf_counter() - start
    if pred is None:
        message = f"letters {outside} are not among the choices {allowed}" if outside else None
        return GradeResult(False, None, "no_answer", seconds, message)
    return GradeResult(pred == gold_letter, pred, "ok", seconds)
