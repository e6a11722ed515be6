"""A response rewritten so that an option letter looks the same however the model typed it.

Full-width and look-alike letters become ASCII (Ｆ, Cyrillic С), LaTeX and markdown wrappers go
(``\\text{B}``, ``$B$``, ``**B**``), a letter inside a formula is a symbol and is masked
(``$\\triangle ABC$``, ``$f(x) + C$``), a boxed letter becomes a marker ``⟦B⟧`` (a boxed answer is
committed by its form), any other boxed content becomes ``⟪n⟫`` with its text kept aside (the
stated value, matched against the option texts), and an ordinal ("the third option", "option
3") becomes the letter it names ("option C"), and a line wrapped in mid-sentence is joined again.
The reader then works on one plain text.

It also finds where a model stops answering the asked question and starts another one
("Question 2: ...", "Human: ...", a chat-template token): :func:`other_question_starts`.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field

BOX_OPEN, BOX_CLOSE = "⟦", "⟧"
_LOOKALIKE = str.maketrans("АВСЕНΑΒΕΗΙ", "ABCEHABEHI")  # Cyrillic and Greek capitals that read as A-J
_LOOKALIKE_RE = re.compile(r"(?<![^\W\d_])[АВСЕНΑΒΕΗΙ](?![^\W\d_])")
_ABBREVIATIONS = re.compile(r"\b(i)\.\s?(e)\.|\b(e)\.\s?(g)\.", re.I)
_WRAPPER = re.compile(
    r"\\(?:text|textbf|textit|textrm|textsf|texttt|mathrm|mathbf|mathit|mathsf|mathtt|mbox|operatorname"
    r"|emph|underline|bf|rm)\s*\{([^{}]*)\}"
)
_FONT_SWITCH = re.compile(r"\\(?:rm|bf|it|sf|tt|mathrm|mathbf|textrm)\b\s*")
_BRACED_LETTER = re.compile(r"\{\s*([A-Ja-j])\s*\}")
_BOXED = re.compile(r"\\(?:boxed|fbox)\s*\{")
_LETTER_LIST = re.compile(
    r"\s*(?:[(\[]?\s*[A-Ja-j]\s*[)\]]?\s*(?:,|/|&|\band\b|\bor\b|和|或|、|;)?\s*)+", re.I
)
_LEADING_LETTER = re.compile(r"\s*[(\[]?\s*([A-Ja-j])\s*(?:[)\]]|[.:](?=\s|$)|\s*[-–—:](?=\s))")
_MATH_DELIMITERS = re.compile(r"\\[()\[\]]|\$")
_FIGURE = re.compile(r"\[asy\].*?\[/asy\]", re.S)
_MATH_SPAN = re.compile(
    r"\$\$(?P<a>.+?)\$\$|\$(?P<b>[^$]+?)\$|\\\((?P<c>.+?)\\\)|\\\[(?P<d>.+?)\\\]"
    r"|\\begin\{(?P<env>[A-Za-z]+\*?)\}(?P<e>.+?)\\end\{(?P=env)\}",
    re.S,
)
_ALONE_IN_MATH = re.compile(r"\s*[(\[]?\s*[A-Ja-j]\s*[)\]]?\s*[.,;:]?\s*")
_SYMBOL = re.compile(r"(?<![A-Za-z⟦])[A-Ja-j](?![A-Za-z⟧])")
_ANSWER_IN_MATH = re.compile(r"answer|final", re.I)
_MARKDOWN = re.compile(r"\*\*|__|`")
_SOFT_BREAK = re.compile(r"(?<=[A-Za-z0-9,)])[ \t]*\n(?=[ \t]*[a-z(])")  # a line wrapped mid-sentence
_ORDINALS = (
    "first second third fourth fifth sixth seventh eighth ninth tenth".split(),
    "1st 2nd 3rd 4th 5th 6th 7th 8th 9th 10th".split(),
)
_ORDINAL = re.compile(
    r"\b(?:the\s+)?(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|last"
    r"|1st|2nd|3rd|4th|5th|6th|7th|8th|9th|10th)\s+(?:(?:answer\s+)?(?:option|choice|alternative)|one)\b",
    re.I,
)
# "Of the options, the second is correct": an ordinal whose noun came earlier in the sentence.
_ORDINAL_AFTER_NOUN = re.compile(
    r"(\b(?:of|among|from)\s+(?:the|these|those|all|all\s+the)?\s*(?:\w+\s+)?(?:options|choices|alternatives)\b"
    r"[^.\n]{0,30}?\bthe\s+)(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|last)\b"
    r"(?!\s+(?:option|choice|alternative|one)\b)",
    re.I,
)
_NUMBERED = re.compile(
    r"\b(option|choice|alternative)\s*(?:no\.?\s*|number\s+|#\s*)?\(?(\d{1,2})\)?(?![\d.,]\d)", re.I
)

_MARKER_LINE = r"(?:^|(?<=[.!?。)]) )[ \t>#*\-]*"  # a line's start, or after a sentence
_NEW_QUESTION_STRONG = re.compile(
    "|".join(
        [
            _MARKER_LINE + r"(?:question|problem|exercise|q)\s*#?\s*(?P<number>\d+)\b",
            _MARKER_LINE + r"(?:human|user)\s*:",
            _MARKER_LINE + r"next\s+question\b",
            _MARKER_LINE + r"the\s+following\s+(?:are|is)\s+(?:a\s+)?multiple[\s-]+choice\s+question",
            _MARKER_LINE + r"#*\s*(?:instruction|input|response)\s*:",
            r"<\|im_start\|>|<\|endoftext\|>|<\|eot_id\|>|<\|start_header_id\|>|<\|user\|>|\[INST\]",
        ]
    ),
    re.I | re.M,
)
_NEW_QUESTION_WEAK = re.compile(
    _MARKER_LINE
    + r"(?:question|problem|exercise|q)\s*#?\s*\d*\s*[:.)]"
    + r"|^[^\n]*\b(?:another|next|similar|new|practice|bonus|follow-up)\s+(?:question|problem|exercise|example)\b"
    # an unlabelled question followed by its own option list
    r"|^[^\n]*\?[ \t]*\n(?:[ \t]*\n)?(?:[^\n]*\n)?[ \t>*\-]*[(\[]?A[)\].:][ \t]",
    re.I | re.M,
)


@dataclass
class Normalized:
    """The rewritten text and the boxed values it refers to as ``⟪n⟫``."""

    text: str
    values: list[str] = field(default_factory=list)


def normalize(response: str, letters: Sequence[str]) -> Normalized:
    """The response as plain text, with boxed answers as markers (see the module docstring)."""
    text = unicodedata.normalize("NFKC", response)
    text = _LOOKALIKE_RE.sub(lambda m: m.group(0).translate(_LOOKALIKE), text)
    text = _ABBREVIATIONS.sub(lambda m: "".join(g for g in m.groups() if g), text)
    for _ in range(3):  # nested wrappers: \textbf{\text{B}}
        text = _WRAPPER.sub(r"\1", text)
    out = Normalized("")
    text = _replace_boxed(text, out.values)
    text = _BRACED_LETTER.sub(r"\1", _FONT_SWITCH.sub("", text))  # {\rm D}
    text = _mask_formulas(text)
    text = _MATH_DELIMITERS.sub(" ", text)
    text = _MARKDOWN.sub("", text)
    text = _SOFT_BREAK.sub(" ", text)
    text = _name_ordinals(text, letters)
    out.text = text
    return out


def _mask_formulas(text: str) -> str:
    """Letters inside a formula are symbols ("$\\triangle A$", "$f(x)+C$") unless a span is just a
    letter ("option $B$") or states the answer; figures (``[asy]``) go."""

    def span(match: re.Match[str]) -> str:
        inner = next(match.group(g) for g in "abcde" if match.group(g) is not None)
        if _ALONE_IN_MATH.fullmatch(inner) or _ANSWER_IN_MATH.search(inner):
            return f" {inner} "
        return f" {_SYMBOL.sub('·', inner)} "

    return _MATH_SPAN.sub(span, _FIGURE.sub(" ", text))


def _replace_boxed(text: str, values: list[str]) -> str:
    """``\\boxed{B}`` -> ``⟦B⟧`` (``⟦A⟧, ⟦C⟧`` for a list); any other content -> ``⟪n⟫``."""
    pieces, pos = [], 0
    for match in _BOXED.finditer(text):
        if match.start() < pos:
            continue
        content, end = _balanced(text, match.end())
        pieces.append(text[pos : match.start()])
        pieces.append(f" {_boxed_marker(content, values)} ")
        pos = end
    pieces.append(text[pos:])
    return "".join(pieces)


def _balanced(text: str, start: int) -> tuple[str, int]:
    """The content of a brace group opened just before ``start`` and the index after its close."""
    depth = 1
    for i in range(start, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[start:i], i + 1
    return text[start:], len(text)


def _boxed_marker(content: str, values: list[str]) -> str:
    if not content.strip():
        return ""
    if _LETTER_LIST.fullmatch(content):
        found = re.findall(r"[A-Ja-j]", re.sub(r"\b(?:and|or)\b", " ", content))
        return ", ".join(f"{BOX_OPEN}{x.upper()}{BOX_CLOSE}" for x in found)
    leading = _LEADING_LETTER.match(content)
    if leading:
        return f"{BOX_OPEN}{leading.group(1).upper()}{BOX_CLOSE}"
    values.append(content)
    return f"⟪{len(values) - 1}⟫"


def _name_ordinals(text: str, letters: Sequence[str]) -> str:
    """ "the third option" / "option 3" -> "option C" (only for positions the item has)."""

    def ordinal(match: re.Match[str]) -> str:
        word = match.group(1).lower()
        index = len(letters) - 1 if word == "last" else _ordinal_index(word)
        return f"option {letters[index]}" if 0 <= index < len(letters) else match.group(0)

    def numbered(match: re.Match[str]) -> str:
        index = int(match.group(2)) - 1
        return f"option {letters[index]}" if 0 <= index < len(letters) else match.group(0)

    def ordinal_after_noun(match: re.Match[str]) -> str:
        word = match.group(2).lower()
        index = len(letters) - 1 if word == "last" else _ordinal_index(word)
        named = f"option {letters[index]}" if 0 <= index < len(letters) else match.group(2)
        return match.group(1) + named

    text = _ORDINAL_AFTER_NOUN.sub(ordinal_after_noun, _ORDINAL.sub(ordinal, text))
    return _NUMBERED.sub(numbered, text)


def _ordinal_index(word: str) -> int:
    for names in _ORDINALS:
        if word in names:
            return names.index(word)
    return -1


def other_question_starts(text: str, first_answer_at: int | None) -> int:
    """Where text about another question begins, or ``len(text)``.

    A numbered question beyond the first, a new chat turn or a template token starts one wherever
    it stands; a plain "Question:" line does only after an answer was already given (before it, it
    is the model restating the asked question).
    """
    cut = len(text)
    for match in _NEW_QUESTION_STRONG.finditer(text):
        number = match.group("number")
        if number is None or int(number) >= 2:
            cut = match.start()
            break
    if first_answer_at is not None:
        for match in _NEW_QUESTION_WEAK.finditer(text, first_answer_at):
            cut = min(cut, match.start())
            break
    return cut
