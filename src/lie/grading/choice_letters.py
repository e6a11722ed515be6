"""The option letters of a response: every letter standing alone, and runs of them as groups.

lighteval's rule for an index (``IndicesExtractionConfig``): a letter counts only when space,
a bracket or punctuation stands on both sides. Reasoning models add words that look like letters:
"a" and "I" before an ordinary word are the English article and pronoun, "e" the Romance "and",
a lower-case letter in a formula ("b + c") is a symbol, and a letter after a noun that names things
("vitamin C", "point A", "statement I", "Type I") is a name. Letters joined by "and", "or", ","
or "/" form one group ("B or D"), which the reader judges as a whole.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from lie.grading import choice_cues as cues

_TOKEN = re.compile(
    r"⟦(?P<boxed>[A-J])⟧"
    r"|(?<![A-Za-z0-9\\^_])[(\[]\s*(?P<bracketed>[A-Ja-j])\s*[)\]]"
    r"|(?<![A-Za-z0-9\\{'’^_])(?<![A-Za-z0-9\\^_][(\[])(?P<bare>[A-Ja-j])(?![A-Za-z0-9'’^_])"
)
_CONNECTOR = re.compile(
    r"[ \t,/&、*_]*(?:(?:and|or|nor|und|oder|et|ou|y|o|e|vs\.?|versus)(?![A-Za-z])|和|或|与|及)?"
    r"[ \t*_]*(?:(?:option|choice)s?[ \t]*)?",
    re.I,
)
# Words after "A" / "I" that make them letters ("A is wrong") rather than the article or pronoun.
_LETTER_VERBS = (
    "is was isn't wasn't and or nor but because since as vs versus fits fit matches seems looks gives "
    "stands survives works alone also too option"
).split()
_A_FOLLOWERS = frozenset(
    _LETTER_VERBS
    + (
        "has had would could does doesn't states says claims contradicts ignores uses assumes describes "
        "violates mentions only here instead remains then therefore so for with being wins not "
        "appears must should will might may cannot can't confuses suggests implies lists shows requires "
        "overstates understates misstates focuses refers makes it which if in on at by"
    ).split()
)
_I_FOLLOWERS = frozenset(_LETTER_VERBS + ["it", "describes"])
_WORD_AFTER = re.compile(r"[ \t]+([A-Za-z][A-Za-z']*)")
_LOWER_OK_AFTER = re.compile(r"\s*(?:$|[.,;:!?)\]*](?![A-Za-z]))")
_OPTION_NOUN_BEFORE = re.compile(
    r"(?:option|choice|alternative|opción|opcion|alternativa|opzione|letter)\s+$", re.I
)


@dataclass
class LetterGroup:
    """Letters joined in one run of text, and what the reader made of them."""

    start: int
    end: int
    letters: list[str] = field(default_factory=list)
    boxed: bool = False
    marked: bool = False  # bracketed, boxed or after "option"/"choice": plainly an option letter
    verdict: str = "mention"  # commit | also (one more letter) | reject | alone | mention


def tokens(text: str) -> list[tuple[int, int, str, bool, bool]]:
    """(start, end, upper-case letter, boxed, marked) of every option letter standing alone."""
    found = []
    for match in _TOKEN.finditer(text):
        letter = match.group("boxed") or match.group("bracketed") or match.group("bare")
        if match.group("bare") and not _is_letter(text, match):
            continue
        if cues.NAME_BEFORE.search(text, max(0, match.start() - 24), match.start()):
            continue
        if letter == "I" and _roman(text, match):
            continue
        marked = not match.group("bare") or bool(
            _OPTION_NOUN_BEFORE.search(text, max(0, match.start() - 20), match.start())
        )
        found.append((match.start(), match.end(), letter.upper(), bool(match.group("boxed")), marked))
    return found


def _is_letter(text: str, match: re.Match[str]) -> bool:
    """False for a letter that reads as a word or a symbol: the article "a", the pronoun "I", the
    Romance "e" before an ordinary word, and a lower-case letter in a formula ("b + c")."""
    letter, end = match.group("bare"), match.end()
    if letter.islower():
        if _LOWER_OK_AFTER.match(text, end):
            return True
        if _OPTION_NOUN_BEFORE.search(text, max(0, match.start() - 20), match.start()):
            return not _WORD_AFTER.match(text, end)
        word = _WORD_AFTER.match(text, end)
        if word is None:
            return False  # an operator, a digit: a symbol in a formula
        return letter not in "aie" or word.group(1).lower() in _A_FOLLOWERS
    if letter in "AI":
        word = _WORD_AFTER.match(text, end)
        followers = _A_FOLLOWERS if letter == "A" else _I_FOLLOWERS
        return word is None or word.group(1).lower() in followers
    return True


def _roman(text: str, match: re.Match[str]) -> bool:
    """An "I" that is a Roman numeral: near II/III/IV, or after "statement" ("statement I is true")."""
    start = match.start()
    return bool(
        cues.ROMAN_NEAR.search(text, max(0, start - 12), match.end() + 12)
        or cues.ROMAN_NOUN_BEFORE.search(text, max(0, start - 16), start)
    )


def groups(text: str) -> list[LetterGroup]:
    """Letters joined by "and", "or", "," or "/" on one line, as one group each (a repeat starts a new one)."""
    groups: list[LetterGroup] = []
    for start, end, letter, boxed, marked in tokens(text):
        last = groups[-1] if groups else None
        if (
            last is not None
            and letter not in last.letters
            and "\n" not in text[last.end : start]
            and _CONNECTOR.fullmatch(text, last.end, start)
        ):
            last.end, last.boxed, last.marked = end, last.boxed or boxed, last.marked or marked
            last.letters.append(letter)
        else:
            groups.append(LetterGroup(start, end, [letter], boxed, marked))
    return groups
