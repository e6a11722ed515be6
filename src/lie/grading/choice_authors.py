"""The authors' multiple-choice grading (``choice_grading: authors``), step for step as their script.

Source: LINs-lab/LIE at commit 1b3bb02fc8b55e07e0defddf77ae531ad0a9e0eb,
``eval_scripts/generate_vllm.py`` (``MULTICHOICE_PATTERNS``, ``extract_multichoice_answer``,
``labeling_multichoice`` and the scoring loop of ``main``), run on the out-of-domain file by
``eval_scripts/eval_ood.sh`` with ``--no-split-think True`` (the whole response is read):

1. math-verify: ``verify(parse("$" + gold + "$"), parse(response))`` (our :func:`grade_math`), so a
   boxed or LaTeX letter (``$B$``) that equals the gold letter is correct;
2. when that is not True, the letter patterns below, in order: the first pattern that matches
   anywhere decides, and its last match is the answer, upper-cased. Only A-E exist for them.

Their quirks are kept, since the point of this mode is like-for-like numbers: no word boundary
after the letter ("the answer is a bit ..." reads A), a pattern high in the list beats a later
and different answer lower in the list (an early ``\\boxed{B}`` beats a final "Answer: C"), a
restated option line "(C) ..." counts, F-J are never read (MMLU-Pro has ten options), and a letter
outside the item's options is simply wrong.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence

from lie.grading.choice import gold_and_letters
from lie.grading.mathverify import grade_math
from lie.grading.result import GradeResult

# The authors' list, highest priority first (their regular expressions, unchanged).
AUTHORS_PATTERNS: tuple[tuple[str, str], ...] = (
    ("boxed", r"\\boxed\{\s*\(?([A-Ea-e])\)?\s*\}"),
    ("answer_colon", r"(?i)\b(?:ANSWER)\s*[:：]\s*\*{0,2}\s*\(?([A-Ea-e])\)?\s*\*{0,2}"),
    ("final_answer_colon", r"(?i)(?:Final\s+Answer)\s*[:：]\s*\*{0,2}\s*\(?([A-Ea-e])\)?\s*\*{0,2}"),
    ("answer_is", r"(?i)(?:the\s+)?(?:correct\s+)?answer\s+is\s*[:：]?\s*\(?([A-Ea-e])\)?"),
    ("option_is_correct", r"(?i)option\s+\(?([A-Ea-e])\)?\s+is\s+correct"),
    ("choose_select", r"(?i)(?:choose|select)\s+\(?([A-Ea-e])\)?"),
    ("line_start_letter", r"(?:^|\n)\s*\*{0,2}\(?([A-Ea-e])\)[\.\s\*]"),
)
_COMPILED = tuple((name, re.compile(pattern)) for name, pattern in AUTHORS_PATTERNS)


def authors_letter(response: str) -> tuple[str | None, str | None]:
    """(the letter their patterns read, the name of the pattern that decided), or (None, None)."""
    for name, pattern in _COMPILED:
        matches = pattern.findall(response)
        if matches:
            return matches[-1].upper(), name
    return None, None


def grade_choice_authors(response: str, gold: str, letters: Sequence[str]) -> GradeResult:
    """math-verify first, then the authors' letter patterns (see the module docstring)."""
    start = time.perf_counter()
    gold_letter, allowed, error = gold_and_letters(gold, letters)
    if error:
        return error
    math = grade_math(response, str(gold))  # their gold text as it is; the letter compare upper-cases
    if math.correct:
        return GradeResult(True, gold_letter, "ok", time.perf_counter() - start)
    letter, _ = authors_letter(response)
    seconds = time.perf_counter() - start
    if letter is not None:
        return GradeResult(letter == gold_letter, letter, "ok", seconds)
    if math.status == "timeout":
        return GradeResult(False, math.pred, "timeout", seconds, math.message)
    return GradeResult(False, math.pred, "no_answer", seconds, "no A-E letter found by the authors' patterns")
