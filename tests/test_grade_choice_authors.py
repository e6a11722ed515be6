"""The authors' multiple-choice mode (``choice_grading: authors``) against their own script.

tests/data/choice_authors_cases.yaml is the behaviour as data (every rule, every quirk). The
differential test reads their eval script at its pinned commit (kept as test data in
tests/data/lie-authors/generate_vllm.py, MIT, checked against its git blob id), takes their pattern list out of its
syntax tree (the file is never imported or run) and compares their loop with our reader on that
table, on the hand-labelled responses and on 10^5 seeded random strings built to hit every rule.
"""

from __future__ import annotations

import ast
import random
import re
from pathlib import Path

import pytest
import yaml

from lie.grading import AUTHORS_RULES, authors_letter, grade_choice, grade_choice_authors, grade_math
from lie.stages.data.sources import git_blob_sha1

DATA = Path(__file__).parent / "data"
CASES = DATA / "choice_authors_cases.yaml"
LABELS = DATA / "choice_labels.yaml"
# LINs-lab/LIE's eval_scripts/generate_vllm.py at 1b3bb02 (MIT), byte for byte (tests/data/README.md)
THEIR_SCRIPT = DATA / "lie-authors" / "generate_vllm.py"
THEIR_SCRIPT_BLOB = "c46aa297f5efaa8e5c02c98714f6284568dd040e"
RULE_NAMES = [rule.name for rule in AUTHORS_RULES]
QUIRKS = (
    "no_boundary_after_letter no_boundary_before_word early_rule_beats_later last_reading_wins no_overlap"
    " f_to_j_never_read full_width_colon restated_option_line rule_3_never_decides only_their_phrases"
    " first_letter_of_two case_folding exact_case_boxed outside_the_options stars line_needs_bracket"
).split()
ABCD = ["A", "B", "C", "D"]


def table() -> list[dict]:
    return yaml.safe_load(CASES.read_text(encoding="utf-8"))["cases"]


# ------------------------------------------------------------------ our reader on the table
def test_the_table_covers_every_rule_and_every_quirk():
    rows = table()
    assert {row["shows"] for row in rows} == {*QUIRKS, "rule"}
    decided = {row["rule"] for row in rows} - {None}
    assert decided == set(RULE_NAMES) - {"final_answer_colon"}  # rule 3 never decides (see the table)
    assert all((row["letter"] is None) == (row["rule"] is None) for row in rows)


@pytest.mark.parametrize("row", table(), ids=lambda row: repr(row["response"][:40]))
def test_our_reader_reads_the_table(row):
    assert authors_letter(row["response"]) == (row["letter"], row["rule"])


def test_the_rules_are_in_their_order():
    assert RULE_NAMES == [
        "boxed",
        "answer_colon",
        "final_answer_colon",
        "answer_is",
        "option_is_correct",
        "choose_select",
        "line_start_letter",
    ]


def test_authors_mode_is_math_verify_first_then_the_rules():
    # math-verify alone: a LaTeX letter outside \boxed{} that no rule reads
    assert authors_letter("so option $D$ is right") == (None, None)
    latex = grade_choice_authors("so option $D$ is right", "D", ABCD)
    assert (latex.correct, latex.pred, latex.status) == (True, "D", "ok")
    # a higher rule wins over a later, different answer (robust: the last commitment counts)
    early = "\\boxed{B}\n\nOn reflection the units are wrong. Answer: C"
    assert (
        grade_choice_authors(early, "B", ABCD).correct and not grade_choice_authors(early, "C", ABCD).correct
    )
    assert grade_choice(early, "C", ABCD).correct
    # a letter outside the item's options is simply wrong; F-J are never read
    outside = grade_choice_authors("The answer is E.", "A", ABCD)
    assert (outside.correct, outside.pred, outside.status) == (False, "E", "ok")
    never = grade_choice_authors("Answer: F", "F", list("ABCDEFGHIJ"))
    assert (never.correct, never.status) == (False, "no_answer")
    assert grade_choice("Answer: F", "F", list("ABCDEFGHIJ")).correct


def test_no_pattern_of_theirs_is_in_the_source():
    """The project's reader is its own code: none of their regular expressions is written in src/."""
    src = Path(__file__).resolve().parents[1] / "src"
    pieces = [r"\(?([A-Ea-e])\)?", r"[A-Ea-e]", "MULTICHOICE_PATTERNS", r"(?:choose|select)", r"\*{0,2}"]
    for path in src.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert not [piece for piece in pieces if piece in text], path


# ------------------------------------------------------------------ their script, read, not run
@pytest.fixture(scope="module")
def their_patterns() -> list[re.Pattern[str]]:
    """Their MULTICHOICE_PATTERNS, evaluated from the syntax tree of their pinned script."""
    data = THEIR_SCRIPT.read_bytes()
    assert git_blob_sha1(data) == THEIR_SCRIPT_BLOB, "not their script at commit 1b3bb02"
    tree = ast.parse(data.decode("utf-8"))
    (node,) = [
        n
        for n in tree.body
        if isinstance(n, ast.Assign)
        and [getattr(t, "id", None) for t in n.targets] == ["MULTICHOICE_PATTERNS"]
    ]
    patterns = ast.literal_eval(node.value)
    assert len(patterns) == len(AUTHORS_RULES)
    return [re.compile(p) for p in patterns]


def their_letter(patterns: list[re.Pattern[str]], text: str) -> tuple[str | None, str | None]:
    """Their extract_multichoice_answer: the first pattern with any match decides, its last match wins."""
    for pattern, name in zip(patterns, RULE_NAMES, strict=True):
        matches = pattern.findall(text)
        if matches:
            return matches[-1].upper(), name
    return None, None


def test_their_script_reads_the_table_as_written(their_patterns):
    wrong = [
        (row["response"], their_letter(their_patterns, row["response"]))
        for row in table()
        if their_letter(their_patterns, row["response"]) != (row["letter"], row["rule"])
    ]
    assert not wrong


def test_their_script_and_ours_agree_on_the_labelled_responses(their_patterns):
    cases = yaml.safe_load(LABELS.read_text(encoding="utf-8"))["cases"]
    differ = [
        c["response"][:80]
        for c in cases
        if their_letter(their_patterns, c["response"]) != authors_letter(c["response"])
    ]
    assert not differ
    decided = {authors_letter(c["response"])[1] for c in cases}
    assert len(decided) >= 5  # the labelled set exercises most rules
    # the verdict too: their scoring loop is math-verify first, then the letter
    for case in cases[::8]:
        gold = case["expected"] or "A"
        theirs = (
            grade_math(case["response"], gold).correct
            or their_letter(their_patterns, case["response"])[0] == gold
        )
        assert grade_choice_authors(case["response"], gold, case["letters"]).correct == theirs, case[
            "response"
        ][:80]


def test_their_script_and_ours_agree_on_random_strings(their_patterns):
    rng = random.Random(20260)
    decided, differ = dict.fromkeys([*RULE_NAMES, None], 0), []
    for _ in range(100_000):
        text = random_response(rng)
        ours = authors_letter(text)
        decided[ours[1]] += 1
        if ours != their_letter(their_patterns, text):
            differ.append(text)
    assert not differ, differ[:5]
    assert all(decided[name] > 1000 for name in RULE_NAMES if name != "final_answer_colon"), decided


# Random responses: pieces shaped like each rule's reading, each part varied (spacing, brackets,
# stars, colons, case, letters beyond E), mixed with noise, so near misses are as common as hits.
_SPACE = [" ", " ", "  ", "\t", "\n", "\u00a0", "\u3000", ""]
_LETTER = list("ABCDEFabcdefx1(")


def _space(r: random.Random, at_least: int = 0) -> str:
    return "".join(r.choice(_SPACE) for _ in range(r.randint(at_least, 2)))


def _letter(r: random.Random) -> str:
    return r.choice(["", "", "(", "( "]) + r.choice(_LETTER) + r.choice(["", "", ")", ") "])


def _case(r: random.Random, word: str) -> str:
    k = r.random()
    if k < 0.5:
        return word
    if k < 0.7:
        return word.upper()
    if k < 0.85:
        return word.capitalize()
    return word.replace("s", r.choice("sſS")).replace("i", r.choice("iıİI"))


_PIECES = [
    lambda r: "\\boxed{" + _space(r) + _letter(r) + _space(r) + r.choice(["}", "", "}}"]),
    lambda r: (
        r.choice(["", "", "x", "_", " ", "**"])
        + _case(r, "answer")
        + _space(r)
        + r.choice([":", "：", "", "::"])
        + _space(r)
        + "*" * r.randint(0, 3)
        + _space(r)
        + _letter(r)
        + _space(r)
        + "*" * r.randint(0, 3)
    ),
    lambda r: (
        _case(r, "final")
        + _space(r, 1)
        + _case(r, "answer")
        + _space(r)
        + r.choice(":：")
        + _space(r)
        + _letter(r)
    ),
    lambda r: (
        r.choice(["", _case(r, "the") + _space(r, 1)])
        + r.choice(["", _case(r, "correct") + _space(r, 1)])
        + _case(r, "answer")
        + _space(r, 1)
        + _case(r, "is")
        + _space(r)
        + r.choice(["", ":", "："])
        + _space(r)
        + _letter(r)
    ),
    lambda r: (
        _case(r, "option")
        + _space(r, 1)
        + _letter(r)
        + _space(r, 1)
        + _case(r, "is")
        + _space(r, 1)
        + _case(r, r.choice(["correct", "correctly", "wrong"]))
    ),
    lambda r: _case(r, r.choice(["choose", "select", "chose"])) + _space(r, 1) + _letter(r),
    lambda r: (
        r.choice(["\n", "\n\n", "\n ", ""])
        + _space(r)
        + "*" * r.randint(0, 3)
        + _letter(r)
        + r.choice([".", " ", "*", "\n", ":", ""])
    ),
    lambda r: r.choice(
        ["the answer is", "I", " a ", "Hmm.", "option", "is correct", "\n", "}", ")", "**", "答案", "é"]
    ),
]


def random_response(r: random.Random) -> str:
    return "".join(r.choice(_PIECES)(r) for _ in range(r.randint(0, 6)))
