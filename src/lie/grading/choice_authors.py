"""The authors' multiple-choice grading (``choice_grading: authors``): their behaviour, our code.

What their eval script does (LINs-lab/LIE at commit 1b3bb02, ``eval_scripts/generate_vllm.py``,
run on the out-of-domain file with ``--no-split-think True``, so the whole response is read):

1. math-verify: ``verify(parse("$" + gold + "$"), parse(response))`` (our :func:`grade_math`), so a
   boxed or LaTeX letter (``$B$``) equal to the gold letter is correct;
2. when that is not True, seven letter rules in a fixed order: the first rule with any reading
   decides, and its last reading is the answer, upper-cased. Only A-E exist for them.

The rules are written here as a small scanner of our own (no regular expressions): each rule names
where a reading may start and the pieces that must follow. docs/evaluation.md ("The authors'
reader") is the rule table in words, with every quirk, and tests/data/choice_authors_cases.yaml the
examples; tests/test_grade_choice_authors.py checks this reader against their script, read from its
pinned commit, on those examples, on the labelled responses and on 10^5 seeded random strings.

Readings of one rule are found left to right and never overlap: after a reading the scan resumes
where it ended (so "answer is answer is B" reads the "a" of the second "answer", and an option line
right after a read one is skipped, since the read one took its line break).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from lie.grading.choice import gold_and_letters
from lie.grading.mathverify import grade_math
from lie.grading.result import GradeResult

READ_LETTERS = "ABCDEabcde"
# Their rules ignore case like Python's re.IGNORECASE: besides A-Z, the long s "ſ" reads as "s" and
# the Turkish dotted and dotless I ("İ", "ı") as "i". One character each, so positions stay put.
_FOLD = str.maketrans({**{c: c.lower() for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ"}, "ſ": "s", "İ": "i", "ı": "i"})

Piece = Callable[[str, str, int], "int | None"]  # (text, folded text, position) -> position after, or None


class _Letter:
    """The piece that reads the answer: one of A-E or a-e."""


LETTER = _Letter()


def spaces(at_least: int = 0) -> Piece:
    """Any run of white space (as ``str.isspace`` sees it), at least ``at_least`` characters."""

    def piece(text: str, folded: str, i: int) -> int | None:
        j = i
        while j < len(text) and text[j].isspace():
            j += 1
        return j if j - i >= at_least else None

    return piece


def maybe(chars: str) -> Piece:
    """One of ``chars`` if it is there (taken when present)."""
    return lambda text, folded, i: i + 1 if i < len(text) and text[i] in chars else i


def one(chars: str, or_space: bool = False) -> Piece:
    """Exactly one of ``chars`` (or, with ``or_space``, one white-space character)."""

    def piece(text: str, folded: str, i: int) -> int | None:
        if i < len(text) and (text[i] in chars or (or_space and text[i].isspace())):
            return i + 1
        return None

    return piece


def word(w: str) -> Piece:
    """The word ``w`` in any case (no boundary asked on either side)."""
    return lambda text, folded, i: i + len(w) if folded.startswith(w, i) else None


def stars(text: str, folded: str, i: int) -> int:
    """Up to two "*" (markdown bold); a third is left for the next piece, which then fails."""
    j = i
    while j < min(len(text), i + 2) and text[j] == "*":
        j += 1
    return j


COLON = ":："  # ASCII and full-width
_ANSWER_TAIL = (
    spaces(),
    one(COLON),
    spaces(),
    stars,
    spaces(),
    maybe("("),
    LETTER,
    maybe(")"),
    spaces(),
    stars,
)


@dataclass(frozen=True)
class Rule:
    """One way their script reads a letter: where a reading starts and what must follow."""

    name: str
    starts: tuple[str, ...]  # words (any case) a reading starts at; "" = the text's start or a line break
    pieces: tuple[Piece | _Letter, ...]
    exact_case: bool = False  # the start words in this case only
    after_non_word: bool = False  # the start word must not follow a letter, digit or "_"

    def read_at(self, text: str, folded: str, i: int) -> tuple[str, int] | None:
        """(the letter, the end) of a reading whose pieces begin at ``i``, or None."""
        letter = None
        for piece in self.pieces:
            if isinstance(piece, _Letter):  # LETTER, the one instance
                if i >= len(text) or text[i] not in READ_LETTERS:
                    return None
                letter, i = text[i].upper(), i + 1
                continue
            after = piece(text, folded, i)
            if after is None:
                return None
            i = after
        assert letter is not None, f"rule {self.name!r} has no LETTER piece"  # every rule has one
        return letter, i

    def readings(self, text: str, folded: str) -> list[str]:
        """Every letter this rule reads, left to right, each scan resuming after the last reading."""
        found, pos = [], 0
        while (start := self._next_start(text, folded, pos)) is not None:
            at, after = start
            reading = self.read_at(text, folded, after)
            if reading is None:
                pos = at + 1
            else:
                found.append(reading[0])
                pos = reading[1]
        return found

    def _next_start(self, text: str, folded: str, pos: int) -> tuple[int, int] | None:
        """(where the next start is, where its pieces begin) at or after ``pos``."""
        if self.starts == ("",):  # the text's start, then each line break (white space itself)
            if pos == 0:
                return 0, 0
            at = text.find("\n", pos)
            return None if at < 0 else (at, at)
        haystack = text if self.exact_case else folded
        while True:
            hits = [(at, len(w)) for w in self.starts if (at := haystack.find(w, pos)) >= 0]
            if not hits:
                return None
            at, length = min(hits)
            if self.after_non_word and at > 0 and _word_char(text[at - 1]):
                pos = at + 1
                continue
            return at, at + length


def _word_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


# Their order, highest priority first (docs/evaluation.md has each rule in words).
AUTHORS_RULES: tuple[Rule, ...] = (
    Rule(
        "boxed",
        ("\\boxed{",),
        (spaces(), maybe("("), LETTER, maybe(")"), spaces(), one("}")),
        exact_case=True,
    ),
    Rule("answer_colon", ("answer",), _ANSWER_TAIL, after_non_word=True),
    Rule("final_answer_colon", ("final",), (spaces(1), word("answer"), *_ANSWER_TAIL)),
    Rule(
        "answer_is",
        ("answer",),
        (spaces(1), word("is"), spaces(), maybe(COLON), spaces(), maybe("("), LETTER, maybe(")")),
    ),
    Rule(
        "option_is_correct",
        ("option",),
        (spaces(1), maybe("("), LETTER, maybe(")"), spaces(1), word("is"), spaces(1), word("correct")),
    ),
    Rule("choose_select", ("choose", "select"), (spaces(1), maybe("("), LETTER, maybe(")"))),
    Rule(
        "line_start_letter", ("",), (spaces(), stars, maybe("("), LETTER, one(")"), one(".*", or_space=True))
    ),
)


def authors_letter(response: str) -> tuple[str | None, str | None]:
    """(the letter their rules read, the name of the rule that decided), or (None, None)."""
    folded = response.translate(_FOLD)
    for rule in AUTHORS_RULES:
        found = rule.readings(response, folded)
        if found:
            return found[-1], rule.name
    return None, None


def grade_choice_authors(response: str, gold: str, letters: Sequence[str]) -> GradeResult:
    """math-verify first, then the authors' letter rules (see the module docstring)."""
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
    return GradeResult(False, math.pred, "no_answer", seconds, "no A-E letter found by the authors' rules")
