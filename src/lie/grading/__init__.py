"""Grading: math-verify as the authors use it, multiple choice A-J, and a pool with hard time limits.

- :func:`grade_math`, :func:`grade_choice`, :func:`grade_item`: one item in this process (the
  reward managers and the pool's workers call these);
- :func:`grade_many`: a batch in worker processes, each item under a hard limit (evaluation).

Every grader returns a :class:`GradeResult`: ``correct``, ``pred``, ``status`` (``ok``,
``no_answer``, ``timeout``, ``error``), ``seconds`` and ``message``.
"""

from lie.grading.choice import extract_choice, grade_choice
from lie.grading.items import KINDS, check_item, grade_item
from lie.grading.mathverify import grade_math
from lie.grading.pool import default_workers, grade_many
from lie.grading.result import STATUSES, GradeResult

__all__ = [
    "GradeResult",
    "STATUSES",
    "KINDS",
    "grade_math",
    "grade_choice",
    "grade_item",
    "grade_many",
    "check_item",
    "extract_choice",
    "default_workers",
]
