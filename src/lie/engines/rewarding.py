"""Grade then score: the one reward step both training engines take for a finished sample.

verl's reward manager (one sample at a time, awaited) and TRL's reward function (a batch at a time)
differ only in how they wait for the grading executor. What a row grades a response against
(``lie.formats.rows.answer_of``: the gold answer, and for a multiple-choice row its letters and
option texts), how the executor is sized (``evaluation.grade_timeout_s`` and ``grade_workers``:
``lie.config.grading_limits``), how ``L_ref`` is checked, and how the grade becomes R = R_acc + R_len +
R_red (``lie.core.reward.score``) is written once, here (:class:`Rewarder`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lie.core.errors import LieError
from lie.core.reward import RewardBreakdown, RewardConfig, score
from lie.formats.rows import Answer, answer_of
from lie.grading import GradeResult, GradingExecutor


@dataclass(frozen=True)
class Rollout:
    """A finished training sample: its decoded text, token ids, and what its row grades it against."""

    text: str
    token_ids: list[int]
    answer: Answer
    where: str = "a training row"

    @classmethod
    def of(cls, row: dict[str, Any], text: str, token_ids: Sequence[int], where: str) -> Rollout:
        """The sample of ``row`` (a verl row, checked by ``lie.formats.rows.answer_of``)."""
        return cls(text, [int(t) for t in token_ids], answer_of(row, where), where)

    def item(self) -> dict[str, Any]:
        """The grading item (``lie.grading.check_item``'s shape): a choice row's letters and texts."""
        answer = self.answer
        item: dict[str, Any] = {"response": self.text, "gold": answer.gold, "kind": answer.kind}
        if answer.kind == "choice":
            item["choices"] = list(answer.letters)
            if answer.options:
                item["options"] = list(answer.options)
        return item


@dataclass(frozen=True)
class Rewarded:
    """A sample's grade (its status: ``ok``, ``timeout``, ...) and its reward breakdown."""

    status: str
    breakdown: RewardBreakdown


def scored(sample: Rollout, graded: GradeResult, config: RewardConfig) -> RewardBreakdown:
    """The reward of a graded sample; a run with a length term needs the row's ``L_ref``."""
    ref_len = sample.answer.ref_len
    if ref_len is None and config.length_term:
        raise LieError(
            f"{sample.where}: no reward_model.num_tokens (L_ref); train on the file `lie reflen` wrote"
        )
    return score(
        sample.text,
        bool(graded.correct),
        len(sample.token_ids),
        ref_len,
        config,
        token_ids=sample.token_ids if config.unit == "token" else None,
    )


class Rewarder:
    """Grade then score, on one grading executor of ``timeout_s`` and ``workers``
    (:func:`grading_limits`); ``reward`` awaits one sample (verl), ``reward_many`` a batch (TRL)."""

    def __init__(self, timeout_s: float, workers: int):
        self.grader = GradingExecutor(timeout_s, workers)

    async def reward(self, sample: Rollout, config: RewardConfig) -> Rewarded:
        graded = await self.grader.grade(sample.item())
        return Rewarded(graded.status, scored(sample, graded, config))

    def reward_many(self, samples: Sequence[Rollout], config: RewardConfig) -> list[Rewarded]:
        grades = self.grader.grade_many([s.item() for s in samples], progress=False)
        return [Rewarded(g.status, scored(s, g, config)) for s, g in zip(samples, grades, strict=True)]

    def close(self) -> None:
        self.grader.close()

    def __enter__(self) -> Rewarder:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
