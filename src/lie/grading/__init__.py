"""Grading: math-verify as the authors use it, multiple choice A-J, and one executor with hard limits.

- :func:`grade_math`, :func:`grade_choice`, :func:`grade_item`: one item in this process (what the
  executor's workers run); multiple choice is read by the robust reader (:func:`read_choice`) or,
  with an item's ``choice_grading: authors``, as the authors' script does (:func:`grade_choice_authors`);
- :class:`GradingExecutor` (``await ex.grade(item)``, ``ex.grade_many(items)``) and :func:`grade_many`:
  items in worker processes, each under a hard limit of its own running time. Every caller of the
  project grades through it (the verl manager, the TRL engine, reflen, evaluate, grade).

Every grader returns a :class:`GradeResult`: ``correct``, ``pred``, ``status`` (``ok``,
``no_answer``, ``timeout``, ``error``), ``seconds`` and ``message``.
"""

from lie.grading.choice import Reading, extract_choice, grade_choice, read_choice
from lie.grading.choice_authors import AUTHORS_RULES, authors_letter, grade_choice_authors
from lie.grading.executor import DEFAULT_TIMEOUT_S, GradingExecutor, default_workers, grade_many
from lie.grading.items import CHOICE_GRADINGS, DEFAULT_CHOICE_GRADING, KINDS, check_item, grade_item
from lie.grading.mathverify import grade_math
from lie.grading.result import STATUSES, GradeResult

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "GradingExecutor",
    "GradeResult",
    "STATUSES",
    "KINDS",
    "CHOICE_GRADINGS",
    "DEFAULT_CHOICE_GRADING",
    "grade_math",
    "grade_choice",
    "grade_item",
    "grade_many",
    "check_item",
    "extract_choice",
    "read_choice",
    "Reading",
    "grade_choice_authors",
    "authors_letter",
    "AUTHORS_RULES",
    "default_workers",
]
