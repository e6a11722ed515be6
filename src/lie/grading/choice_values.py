"""A stated value that equals one option's text ("\\boxed{6}" when option C is "6") names that option.

Reasoning models trained on math often box the value rather than the letter. The value counts as
the letter only when it equals exactly one option: the same text once case, spacing, LaTeX
wrappers and a leading article are set aside, or, for mathematical options, the same value by
math-verify (``\\frac{1}{4}`` and ``0.25``), called as the math grader calls it.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence

_WRAPPER = re.compile(
    r"\\(?:text|textbf|textit|textrm|mathrm|mathbf|mathit|mbox|operatorname)\s*\{([^{}]*)\}"
)
_SPACING = re.compile(r"\\[,;:! ]|\\(?:left|right|displaystyle)\b|~|\s+")
_EDGE = re.compile(r"^[\s.,;:!\"'“”‘’]+|[\s.,;:!\"'“”‘’]+$")
_ARTICLE = re.compile(r"^(?:the|a|an)\s+", re.I)
_DIGIT = re.compile(r"\d")
MATH_TIMEOUT_S = 2  # per parse and comparison; an option is short


def canonical(text: str) -> str:
    """The text as compared: no wrappers, spacing, math delimiters, edge punctuation or article."""
    for _ in range(2):
        text = _WRAPPER.sub(r"\1", text)
    text = text.replace("$", "").replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    text = _ARTICLE.sub("", _EDGE.sub("", text))
    return _SPACING.sub("", text).casefold()


def option_for_value(value: str, options: Sequence[str], letters: Sequence[str]) -> str | None:
    """The letter of the one option whose text equals ``value``, or None (none, or more than one)."""
    want = canonical(value)
    if not want:
        return None
    same = [letters[i] for i, text in enumerate(options) if canonical(text) == want]
    if not same and _DIGIT.search(want):
        same = [
            letters[i] for i, text in enumerate(options) if _DIGIT.search(text) and _same_value(text, value)
        ]
    return same[0] if len(same) == 1 else None


def _same_value(option: str, value: str) -> bool:
    """math-verify's equality of two short math texts (False when either does not parse)."""
    from math_verify import parse, verify
    from math_verify.errors import TimeoutException

    main = threading.current_thread() is threading.main_thread()
    limit = MATH_TIMEOUT_S if main else None
    try:
        gold = parse(_as_math(option), parsing_timeout=limit)
        pred = parse(_as_math(value), parsing_timeout=limit)
        return bool(gold) and bool(pred) and verify(gold, pred, timeout_seconds=limit) is True
    except (Exception, TimeoutException):  # math-verify's own failures are False; so is anything else
        return False


def _as_math(text: str) -> str:
    return text if "$" in text else f"${text}$"
