"""Reasoning behaviours in responses, counted by readable phrase patterns (``behaviours.yaml``).

The paper reports that LIE raises backtracking, verification, subgoal setting and enumeration
(backtracking 103 -> 121). This classifier is transparent on purpose: every pattern is a line of
``behaviours.yaml`` with a comment, the counts are deterministic, and its precision and recall
on labelled sentences are tested (tests/test_behaviours.py). A response is cut into sentences
(:func:`split_sentences`); the count of a behaviour is the number of sentences that show it.
For a model's judgement instead of phrases, see :mod:`lie.analysis.judge`.

    from lie.analysis.behaviours import load_classifier
    load_classifier().count("Wait, that is wrong. Let's verify: 2 + 2 = 4.")
    # {'backtracking': 1, 'verification': 1, 'subgoal_setting': 0, 'enumeration': 0}
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lie.config.yamlio import load_yaml_mapping
from lie.core.errors import LieError

PATTERNS_FILE = Path(__file__).with_name("behaviours.yaml")
BEHAVIOURS = ("backtracking", "verification", "subgoal_setting", "enumeration")

# a sentence ends at . ! ? (and closing quotes/brackets) followed by white space, or at a line break
_BOUNDARY = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"')\]]))\s+|\s*\n\s*")
# pieces ending like these are not sentence ends: "e.g. x", "Fig. 2", a lone initial "A. Smith"
_ABBREVIATION = re.compile(r"(\b(e\.g|i\.e|etc|vs|cf|fig|eq|no|approx|resp)\.|(^|\s)[A-Z]\.)$", re.IGNORECASE)


def split_sentences(text: str) -> list[str]:
    """Sentences of a response: cut after . ! ? before white space, and at line breaks."""
    pieces = [p for p in _BOUNDARY.split(text) if p and p.strip()]
    out: list[str] = []
    for piece in pieces:
        if out and _ABBREVIATION.search(out[-1]):
            out[-1] = f"{out[-1]} {piece}"
        else:
            out.append(piece.strip())
    return out


PATTERN_TIME_LIMIT_S = 2.0  # one search of a user's pattern in one sentence
# A user's pattern is bounded before it is compiled: the regex engine writes a counted repetition out
# in full (a{1000000000} fills the memory at compile time) and follows a recursive call ((?R)) until
# the memory is gone. Phrase patterns need neither.
MAX_PATTERN_CHARS = 1000
MAX_REPEAT = 1000  # one count: a{1000}
MAX_EXPANSION = 100_000  # counts multiplied through nested groups: (?:a{100}){1000}
_COUNT = re.compile(r"\{(\d*)(?:,(\d*))?\}")
_RECURSION = re.compile(r"\(\?(?:R|[-+]?\d+|&\w+|P>\w+)\)")


def _skip_class(text: str, i: int) -> int:
    """The index after the character class that starts at ``text[i] == "["``."""
    j = i + 1
    j += text.startswith("^", j)
    j += text.startswith("]", j)
    while j < len(text) and text[j] != "]":
        j += 2 if text[j] == "\\" else 1
    return j + 1


def pattern_problem(text: str) -> str | None:
    """What makes a user's pattern too costly to compile or run (see :data:`MAX_EXPANSION`), else None."""
    if len(text) > MAX_PATTERN_CHARS:
        return f"longer than {MAX_PATTERN_CHARS} characters"
    stack = [1]  # per open group: the largest expansion of a counted repetition inside it
    last, i = 1, 0  # last: the expansion of the item a quantifier would repeat
    while i < len(text):
        char, found = text[i], None
        if char == "\\":
            end = text.find("}", i) + 1 if text.startswith("{", i + 2) else 0  # \x{263a}, \p{L}, \N{...}
            i, last = max(end, i + 2), 1
            continue
        if char == "[":
            i, last = _skip_class(text, i), 1
            continue
        if char == "(":
            found = _RECURSION.match(text, i)
            if found:
                return f"{found.group()} is a recursive call, which grows without end; write the phrase out"
            stack.append(1)
        elif char == ")":
            last = stack.pop() if len(stack) > 1 else 1
            stack[-1] = max(stack[-1], last)
        elif char == "{" and (found := _COUNT.match(text, i)) and any(found.groups()):
            count = max(int(g) for g in found.groups() if g)
            if count > MAX_REPEAT:
                return f"the repetition {found.group()} is more than {MAX_REPEAT} times"
            last *= count
            if last > MAX_EXPANSION:
                return f"nested repetitions ending in {found.group()} expand to more than {MAX_EXPANSION:,} items"
            stack[-1] = max(stack[-1], last)
            i = found.end()
            continue
        else:
            last = 1
        i += 1
    return None


class TimedPattern:
    """A user's pattern (``--patterns FILE``), bounded before it is compiled (:func:`pattern_problem`)
    and searched with a time limit: one that backtracks without end (``(a+)+$``) is a LieError naming
    it, never a hang (the ``regex`` engine's timeout)."""

    def __init__(self, text: str, where: str):
        import regex

        self.pattern, self.where = text, where
        shown = repr(text) if len(text) <= 80 else repr(text[:80]) + "..."
        problem = pattern_problem(text)
        if problem:
            raise LieError(f"{where} {shown}: {problem}")
        try:
            self._compiled = regex.compile(text, regex.IGNORECASE | regex.VERSION0)
        except (regex.error, OverflowError, MemoryError, RecursionError) as exc:
            raise LieError(f"{where} {shown}: {exc}") from None

    def search(self, sentence: str) -> object:
        try:
            return self._compiled.search(sentence, timeout=PATTERN_TIME_LIMIT_S)
        except TimeoutError:
            raise LieError(
                f"{self.where} {self.pattern!r} takes more than {PATTERN_TIME_LIMIT_S:g} s on one sentence "
                "(nested repetition backtracks without end); simplify it"
            ) from None
        except (MemoryError, RecursionError):
            raise LieError(
                f"{self.where} {self.pattern!r} runs out of memory on one sentence; simplify it"
            ) from None


@dataclass(frozen=True)
class Classifier:
    """Compiled patterns per behaviour; ``source`` is the file they came from."""

    patterns: Mapping[str, tuple[re.Pattern[str], ...]]
    descriptions: Mapping[str, str]
    source: str = str(PATTERNS_FILE)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.patterns)

    def labels(self, sentence: str) -> set[str]:
        """The behaviours one sentence shows."""
        return {name for name, pats in self.patterns.items() if any(p.search(sentence) for p in pats)}

    def count(self, response: str) -> dict[str, int]:
        """Sentences of ``response`` that show each behaviour."""
        counts = dict.fromkeys(self.names, 0)
        for sentence in split_sentences(response):
            for name in self.labels(sentence):
                counts[name] += 1
        return counts

    def why(self, sentence: str) -> dict[str, list[str]]:
        """The patterns that matched, per behaviour: to debug a count or a pattern."""
        hits = {name: [p.pattern for p in pats if p.search(sentence)] for name, pats in self.patterns.items()}
        return {name: found for name, found in hits.items() if found}


def load_classifier(path: str | Path | None = None) -> Classifier:
    """The classifier of ``behaviours.yaml`` (or another file of the same form)."""
    source = Path(path) if path is not None else PATTERNS_FILE
    entries = load_yaml_mapping(source, what="behaviour patterns").get("behaviours")
    if not isinstance(entries, dict) or not entries:
        raise LieError(f"{source}: expected a mapping 'behaviours: {{name: {{description, patterns}}}}'")
    patterns: dict[str, tuple[re.Pattern[str], ...]] = {}
    descriptions: dict[str, str] = {}
    for name, entry in entries.items():
        if (
            not isinstance(entry, dict)
            or not isinstance(entry.get("patterns"), list)
            or not entry["patterns"]
        ):
            raise LieError(f"{source}: behaviours.{name} needs a non-empty list 'patterns'")
        compiled: list[Any] = []
        for i, text in enumerate(entry["patterns"]):
            where = f"{source}: behaviours.{name}.patterns[{i}]"
            if source != PATTERNS_FILE:
                compiled.append(TimedPattern(str(text), where))
                continue
            try:
                compiled.append(re.compile(str(text), re.IGNORECASE))
            except re.error as exc:
                raise LieError(f"{where} {text!r}: {exc}") from None
        patterns[str(name)] = tuple(compiled)
        descriptions[str(name)] = " ".join(str(entry.get("description") or "").split())
    return Classifier(patterns, descriptions, str(source))


@dataclass
class Tally:
    """Behaviour counts over many responses."""

    names: tuple[str, ...]
    responses: int = 0
    counts: dict[str, int] = field(default_factory=dict)  # sentences, summed over responses
    with_behaviour: dict[str, int] = field(default_factory=dict)  # responses with at least one

    def __post_init__(self) -> None:
        for name in self.names:
            self.counts.setdefault(name, 0)
            self.with_behaviour.setdefault(name, 0)

    def add(self, counts: Mapping[str, int]) -> None:
        self.responses += 1
        for name in self.names:
            value = int(counts.get(name, 0))
            self.counts[name] += value
            self.with_behaviour[name] += value > 0

    def merge(self, other: Tally) -> None:
        self.responses += other.responses
        for name in self.names:
            self.counts[name] += other.counts[name]
            self.with_behaviour[name] += other.with_behaviour[name]

    def per_100(self, name: str) -> float | None:
        """Occurrences per 100 responses (``None`` without responses)."""
        return 100.0 * self.counts[name] / self.responses if self.responses else None


def tally(texts: Iterable[str], classifier: Classifier) -> Tally:
    """Counts of every behaviour over ``texts``."""
    out = Tally(classifier.names)
    for text in texts:
        out.add(classifier.count(text))
    return out
