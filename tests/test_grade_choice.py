"""Multiple-choice extraction: the stated forms, A-J, the last answer wins, only the item's letters."""

from __future__ import annotations

import pytest

from lie.grading import extract_choice, grade_choice

ABCD = ["A", "B", "C", "D"]
A_TO_J = list("ABCDEFGHIJ")


@pytest.mark.parametrize(
    "response, letters, expected",
    [
        ("So the answer is \\boxed{B}.", ABCD, "B"),
        ("Final: $\\boxed{(c)}$", ABCD, "C"),
        ("\\boxed{\\text{D}}", ABCD, "D"),
        ("\\boxed{\\textbf{(A)}}", ABCD, "A"),
        ("\\boxed{B) 42}", ABCD, "B"),
        ("The answer is (A).", ABCD, "A"),
        ("Therefore, the correct answer is: c", ABCD, "C"),
        ("the answer is option D", ABCD, "D"),
        ("the answer is **B**", ABCD, "B"),
        ("**Answer:** J", A_TO_J, "J"),
        ("**Answer**: (H)", A_TO_J, "H"),
        ("ANSWER: g", A_TO_J, "G"),
        ("Final Answer: I", A_TO_J, "I"),
        ("Let me check each option.\n\n(C)", ABCD, "C"),
        ("Reasoning...\n\n**D.**", ABCD, "D"),
        ("Reasoning...\nb", ABCD, "B"),
        # the last stated answer wins
        ("The answer is A. Wait, no: the answer is (C).", ABCD, "C"),
        ("\\boxed{B} ... on reflection, Answer: D", ABCD, "D"),
        # words, not answers
        ("Answer: I think the answer is (B)", A_TO_J, "B"),
        ("Answer: I think so.", A_TO_J, None),
        ("Answer: A careful count gives 3.", ABCD, None),
        ("the answer is a bit subtle, so \\boxed{C}", ABCD, "C"),
        ("The answer is A because the others fail.", ABCD, "A"),
        ("the answer is a number", ABCD, None),
        ("I do not know.", ABCD, None),
        ("\\boxed{Because}", ABCD, None),
        ("The options are (A) 1 (B) 2 (C) 3 (D) 4, and I compute 3.", ABCD, None),
        # never a letter outside the item's choices
        ("\\boxed{E}", ABCD, None),
        ("The answer is (B). Hmm, \\boxed{F}", ABCD, "B"),
        ("\\boxed{J}", A_TO_J, "J"),
    ],
)
def test_extraction(response, letters, expected):
    assert extract_choice(response, letters)[0] == expected


def test_grading_statuses():
    right = grade_choice("Answer: (c)", "C", ABCD)
    assert (right.correct, right.pred, right.status) == (True, "C", "ok")
    wrong = grade_choice("\\boxed{A}", "c", ABCD)
    assert (wrong.correct, wrong.pred, wrong.status) == (False, "A", "ok")
    none = grade_choice("no idea", "C", ABCD)
    assert (none.correct, none.pred, none.status) == (False, None, "no_answer")
    outside = grade_choice("\\boxed{E}", "C", ABCD)
    assert outside.status == "no_answer" and "['E'] are not among the choices" in outside.message
    bad = grade_choice("\\boxed{E}", "E", ABCD)
    assert (bad.correct, bad.status) == (False, "error")
