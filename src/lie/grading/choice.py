"""Multiple-choice answers (A-J): the option a response commits to, read as a careful person would.

The authors' eval script reads letters with a priority list of regular expressions limited to A-E
(our ``choice_grading: authors`` mode, :mod:`lie.grading.choice_authors`). This robust reader, the
default, reads A-J and only the item's own letters, in four steps:

1. :func:`lie.grading.choice_text.normalize`: one plain text (full-width and look-alike letters,
   LaTeX and markdown wrappers, boxed letters as markers, "the third option" as "option C").
2. :func:`lie.grading.choice_letters.groups`: every letter standing alone that is not a word, a
   symbol or a name, in groups ("B or D").
3. Each group is judged from its neighbours (:mod:`lie.grading.choice_cues`): *committed*
   (``\\boxed{}``, an answer word in several languages, a verb such as "I'd pick", a confirmation
   such as "is correct", a sentence or line of its own), *rejected* ("not A", "A is wrong"), or a
   mere mention (a question mark, "if", "let me check whether"). With the option texts, a stated
   value equal to exactly one option's text is a commitment to it (:mod:`lie.grading.choice_values`).
4. Text about a question the model invents after answering ("Question 2: ...", "Human: ...") is
   dropped, and the last commitment is the answer: a self-correction counts, and a commitment to
   two letters at once ("the answer is B or D") is no answer.
"""

from __future__ import annotations

import re
import time
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass

from lie.core.errors import LieError
from lie.grading import choice_cues as cues
from lie.grading.choice_letters import LetterGroup
from lie.grading.choice_letters import groups as letter_groups
from lie.grading.choice_text import normalize, other_question_starts
from lie.grading.choice_values import option_for_value
from lie.grading.result import GradeResult

LETTERS = "ABCDEFGHIJ"

_SENTENCE_BREAK = re.compile(r"[.!?。！？;；](?=\s|$)")
_VALUE = re.compile(r"⟪(\d+)⟫")
_VALUE_AFTER_ANSWER = re.compile(
    cues.ANSWER_WORD
    + r"(?:[^\n.!?;]{0,40}?"
    + cues.COPULA
    + r")\s*(?P<value>[^\n]{1,80}?)\s*(?:[.!。](?=\s|$)|$)",
    re.I | re.M,
)
_LEFT_CHARS, _RIGHT_CHARS, _SENTENCE_CHARS = 160, 120, 300


@dataclass(frozen=True)
class Reading:
    """What a response answers: ``letter`` (None when no single option), and why not when None."""

    letter: str | None
    outside: tuple[str, ...] = ()  # committed letters that are not among the item's options
    conflict: tuple[str, ...] = ()  # the last commitment named these letters at once


def _left(text: str, start: int, floor: int) -> str:
    """The text before a group, back to the sentence start, a previous group, or an answer line ending in ":"."""
    lines = text[max(floor, start - _LEFT_CHARS) : start].split("\n")
    left = lines[-1]
    if cues.LEFT_EMPTY.fullmatch(left):
        previous = [line for line in lines[:-1] if line.strip()]
        if previous and re.search(r"(?:[:：]|" + cues.ANSWER_WORD + r"\W*)\s*$", previous[-1], re.I):
            left = previous[-1] + " " + left
    breaks = list(_SENTENCE_BREAK.finditer(left))
    return left[breaks[-1].end() :] if breaks else left


def _right(text: str, end: int, ceiling: int) -> str:
    """The text after a group, to the end of its sentence or line, or the next group."""
    right = text[end : min(ceiling, end + _RIGHT_CHARS)].split("\n", 1)[0]
    right = right[1:] if right[:1] in ")]" else right  # "b) is correct"
    stop = _SENTENCE_BREAK.search(right, 1)
    return right[: stop.end()] if stop else right


def _alone(text: str, group: LetterGroup) -> bool:
    """The group is its line's only content ("(C)", "**D.**", "b")."""
    floor = max(0, group.start - _SENTENCE_CHARS)
    line_start = text.rfind("\n", floor, group.start) + 1
    if line_start == 0 and floor > 0:
        return False
    ceiling = min(len(text), group.end + _SENTENCE_CHARS)
    line_end = text.find("\n", group.end, ceiling)
    if line_end < 0 and ceiling < len(text):
        return False
    after = text[group.end : ceiling if line_end < 0 else line_end]
    return bool(
        cues.LEFT_EMPTY.fullmatch(text[line_start : group.start]) and cues.LINE_ALONE.fullmatch(after)
    )


def _judge(text: str, groups: list[LetterGroup]) -> None:
    """Set each group's verdict from its neighbours (see :mod:`lie.grading.choice_cues`)."""
    starts = [g.start for g in groups]
    for i, group in enumerate(groups):
        previous = groups[i - 1] if i else None
        left = _left(text, group.start, previous.end if previous else 0)
        right = _right(text, group.end, groups[i + 1].start if i + 1 < len(groups) else len(text))
        after_rejection = (
            previous is not None
            and previous.verdict == "reject"
            and not re.search(r"[\n.!?。]", text[previous.end : group.start])
        )
        group.verdict = _verdict(text, groups, starts, group, left, right, after_rejection)
    _drop_letter_lists(text, groups)


def _verdict(
    text: str,
    groups: list[LetterGroup],
    starts: list[int],
    group: LetterGroup,
    left: str,
    right: str,
    after_rejection: bool,
) -> str:
    """commit, reject, alone (a line of its own, decided later) or mention."""
    if cues.TENTATIVE.match(right):
        return "mention"
    if cues.EXCEPT.search(left):  # "everything except B is wrong", "every option except C fails"
        if cues.NEG_AFTER.match(right) or cues.NEGATIVE_WORD.search(left):
            return "commit"
        return "reject" if cues.AFTER.match(right) else "mention"
    if cues.NEG_BEFORE.search(left) or cues.NEG_AFTER.match(right):
        return "reject"
    if (cues.ALSO_BEFORE.search(left) or cues.ALSO_AFTER.match(right)) and not cues.CONDITION.search(right):
        return "also"
    if group.boxed or (cues.LEAD.search(left) and not cues.QUESTIONING.search(left)):
        return "commit"
    if cues.AFTER.match(right) and not cues.CONDITION.search(right) and not cues.EXPLORE.search(left):
        return "commit"
    ends = bool(cues.SENTENCE_END.match(right))
    if cues.EQUATE.search(left) and (group.marked or ends) and not cues.QUESTIONING.search(left):
        return "commit"
    verb = cues.AFTER_VERB.match(right)
    if (
        verb
        and (group.marked or cues.AFTER_VERB_END.fullmatch(verb.group("rest")))
        and not cues.EXPLORE.search(left)
    ):
        return "commit"
    if after_rejection and cues.CONTRAST.search(left):
        return "commit"
    if cues.CONCLUDE.search(left) and cues.SENTENCE_END.match(right) and not cues.HEDGE.search(left):
        return "commit"
    if _alone(text, group):
        return "alone"
    if group.marked and _affirmed(text, groups, starts, group):
        return "commit"
    return "mention"


def _affirmed(text: str, groups: list[LetterGroup], starts: list[int], group: LetterGroup) -> bool:
    """The sentence names this option last and says it fits, without a hedge.

    Other options in the sentence may only be rejected ones or earlier ones that include it
    ("Between (A) and (D), (D) has the right dimensions").
    """
    start, end = _sentence_bounds(text, group)
    for other in groups[bisect_left(starts, start) : bisect_left(starts, end)]:
        if other is group or other.verdict == "reject":
            continue
        if other.start > group.start or not set(group.letters) <= set(other.letters):
            return False
    sentence = text[start:end]
    return bool(cues.AFFIRM.search(sentence)) and not cues.HEDGE.search(sentence)


def _sentence_bounds(text: str, group: LetterGroup) -> tuple[int, int]:
    """The sentence around a group, at most ``_SENTENCE_CHARS`` either side."""
    floor = max(0, group.start - _SENTENCE_CHARS)
    line_start = text.rfind("\n", floor, group.start) + 1 or floor
    breaks = [m.end() for m in _SENTENCE_BREAK.finditer(text, line_start, group.start)]
    start = breaks[-1] if breaks else line_start
    ceiling = min(len(text), group.end + _SENTENCE_CHARS)
    line_end = text.find("\n", group.end, ceiling)
    line_end = ceiling if line_end < 0 else line_end
    stop = _SENTENCE_BREAK.search(text, group.end + 1, line_end)
    return start, stop.end() if stop else line_end


def _drop_letter_lists(text: str, groups: list[LetterGroup]) -> None:
    """Letters alone on consecutive lines are a list of labels, not answers."""
    alone = [g for g in groups if g.verdict == "alone"]
    lines, line, pos = [], 0, 0
    for group in alone:  # in text order: count newlines incrementally
        line += text.count("\n", pos, group.start)
        pos = group.start
        lines.append(line)
    taken = set(lines)
    for group, number in zip(alone, lines, strict=True):
        group.verdict = "mention" if {number - 1, number + 1} & taken else "commit"


def _letter_commitments(groups: list[LetterGroup]) -> list[tuple[int, tuple[str, ...]]]:
    """(position, letters) of each commitment; "also X" adds X to the commitment before it."""
    found: list[tuple[int, tuple[str, ...]]] = []
    for group in groups:
        letters = tuple(dict.fromkeys(group.letters))
        if group.verdict == "commit":
            found.append((group.start, letters))
        elif group.verdict == "also" and found:
            found.append((group.start, tuple(dict.fromkeys(found[-1][1] + letters))))
    return found


def _value_commitments(text: str, values: list[str], options: Sequence[str], letters: Sequence[str]):
    """(position, (letter,)) for each stated value that equals exactly one option's text."""
    found = []
    for match in _VALUE.finditer(text):
        letter = option_for_value(values[int(match.group(1))], options, letters)
        if letter:
            found.append((match.start(), (letter,)))
    for match in _VALUE_AFTER_ANSWER.finditer(text):
        letter = option_for_value(_VALUE.sub("", match.group("value")), options, letters)
        if letter:
            found.append((match.start("value"), (letter,)))
    return found


def read_choice(response: str, letters: Sequence[str], options: Sequence[str] | None = None) -> Reading:
    """The option ``response`` commits to among ``letters`` (option texts ``options``, if known)."""
    allowed = [str(x).strip().upper() for x in letters]
    if options is not None and len(options) != len(allowed):
        raise LieError(f"options: {len(options)} option texts for the {len(allowed)} letters {allowed}")
    normalized = normalize(response, allowed)
    text = normalized.text
    groups = letter_groups(text)
    _judge(text, groups)
    commitments = _letter_commitments(groups)
    if options:
        commitments += _value_commitments(text, normalized.values, options, allowed)
    commitments.sort()
    cut = other_question_starts(text, commitments[0][0] if commitments else None)
    stated = [said for position, said in commitments if position < cut]
    outside = tuple(sorted({x for said in stated for x in said if x not in allowed}))
    for said in reversed(stated):
        if len(said) > 1:
            return Reading(None, outside, said)
        if said[0] in allowed:
            return Reading(said[0], outside)
    return Reading(None, outside)


def extract_choice(
    response: str, letters: Sequence[str], options: Sequence[str] | None = None
) -> tuple[str | None, list[str]]:
    """(the committed letter among ``letters`` or None, the committed letters outside them)."""
    reading = read_choice(response, letters, options)
    return reading.letter, list(reading.outside)


def gold_and_letters(gold: str, letters: Sequence[str]) -> tuple[str, list[str], GradeResult | None]:
    """The gold letter and the item's letters, upper case; an ``error`` result when gold is not one."""
    gold_letter = str(gold).strip().upper()
    allowed = [str(letter).strip().upper() for letter in letters]
    if gold_letter not in allowed:
        return (
            gold_letter,
            allowed,
            GradeResult(False, None, "error", 0.0, f"gold {gold!r} is not one of {allowed}"),
        )
    return gold_letter, allowed, None


def grade_choice(
    response: str, gold: str, letters: Sequence[str], options: Sequence[str] | None = None
) -> GradeResult:
    """Grade a multiple-choice response: correct when the option it commits to is ``gold``."""
    start = time.perf_counter()
    gold_letter, allowed, error = gold_and_letters(gold, letters)
    if error:
        return error
    reading = read_choice(response, allowed, options)
    seconds = time.perf_counter() - start
    if reading.letter is None:
        return GradeResult(False, None, "no_answer", seconds, _why_none(reading, allowed))
    return GradeResult(reading.letter == gold_letter, reading.letter, "ok", seconds)


def _why_none(reading: Reading, allowed: list[str]) -> str | None:
    if reading.conflict:
        return f"committed to several letters at once: {list(reading.conflict)}"
    if reading.outside:
        return f"letters {list(reading.outside)} are not among the choices {allowed}"
    return None
