"""Grade then score: the one reward step both training engines take for a finished sample.

verl's reward manager (one sample at a time, awaited) and TRL's reward function (a batch at a time)
differ only in how they reach the grading executor. What is graded, how ``L_ref`` is checked, and
how the grade becomes R = R_acc + R_len + R_red (``lie.core.reward.score``) and a rollout record
(``lie.formats.runs.rollout_record``) is written once, here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lie.core.errors import LieError
from lie.core.reward import RewardBreakdown, RewardConfig, score
from lie.grading import GradeResult


@dataclass(frozen=True)
class Rollout:
    """A finished training sample: its decoded text, token ids, and what its row says about it."""

    text: str
    token_ids: list[int]
    gold: str
    kind: str = "math"
    letters: tuple[str, ...] = ()
    options: tuple[str, ...] = ()
    ref_len: int | None = None
    where: str = "a training row"

    def item(self) -> dict[str, Any]:
        """The grading item (``lie.grading.check_item``'s shape)."""
        item: dict[str, Any] = {"response": self.text, "gold": self.gold, "kind": self.kind}
        if self.kind == "choice":
            item["choices"] = list(self.letters)
            if self.options:
                item["options"] = list(self.options)
        return item


def scored(sample: Rollout, graded: GradeResult, config: RewardConfig) -> RewardBreakdown:
    """The reward of a graded sample; a run with a length term needs the row's ``L_ref``."""
    if sample.ref_len is None and config.length_term:
        raise LieError(
            f"{sample.where}: no reward_model.num_tokens (L_ref); train on the file `lie reflen` wrote"
        )
    return score(
        sample.text,
        bool(graded.correct),
        len(sample.token_ids),
        sample.ref_len,
        config,
        token_ids=sample.token_ids if config.unit == "token" else None,
    )
