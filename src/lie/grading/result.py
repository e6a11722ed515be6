"""The outcome of grading one response: what every grader returns and every report counts."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

STATUSES = ("ok", "no_answer", "timeout", "error")
PRED_MAX_CHARS = 1000  # a prediction is for reading; a 200k-digit "answer" is cut


@dataclass
class GradeResult:
    """``correct`` is False unless ``status`` is ``ok``; ``message`` says why for the other statuses."""

    correct: bool
    pred: str | None
    status: str = "ok"
    seconds: float = 0.0
    message: str | None = None

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {self.status!r}")
        if self.correct and self.status != "ok":
            raise ValueError(f"a {self.status!r} result cannot be correct")
        if self.pred is not None and len(self.pred) > PRED_MAX_CHARS:
            self.pred = self.pred[:PRED_MAX_CHARS] + "…"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)
