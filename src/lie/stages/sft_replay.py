"""Decision-masked replay: full solutions kept in the shallow phase without teaching "never stop".

The shallow phase of the supervised stage (``lie.stages.sft``) teaches a stop habit, and on its own it
erases the later steps the full-solution phase taught (docs/study.md: a step k is in a (1 - s)^k share
of the shallow examples). With ``replay`` > 0 that share of every shallow-phase batch is full solutions
whose *decision* positions are trained conditional on continuing: where an answer may stop or write its
next step, the tokens that open the answer there (the stop tokens) are left out of that position's
softmax, so the full solutions rehearse every step while the stop habit is learnt from the shallow
examples alone.

A decision is found from the task's own written solutions (``written_solution(problem, j)``): the first
character where the answer that stops after ``j`` steps and the full solution differ, for every
``j < depth``. The token that holds that character is the choice; both answers must have tokenized
their common prefix alike (a tokenizer that merged across the decision would make it no single choice),
else the stage stops with one line naming the problem.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from lie.core.errors import LieError


@dataclass(frozen=True)
class ReplayExample:
    """A full solution's target ids (end-of-turn included) and the indices of its decision tokens."""

    target: list[int]
    decisions: tuple[int, ...]


def _common_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def decision_chars(task: ModuleType, problem: Any) -> list[tuple[int, str]]:
    """Per decision ``j < depth``: the character where stopping after ``j`` steps and going on part, and
    the text of the answer that stops there."""
    full = task.written_solution(problem, problem.depth)
    out = []
    for j in range(problem.depth):
        stop = task.written_solution(problem, j)
        out.append((_common_prefix(full, stop), stop))
    return out


def _encode(tokenizer: Any, text: str) -> tuple[list[int], list[tuple[int, int]]]:
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    return list(enc["input_ids"]), [tuple(o) for o in enc["offset_mapping"]]


def _token_at(offsets: Sequence[tuple[int, int]], char: int) -> int:
    for i, (start, end) in enumerate(offsets):
        if start <= char < end:
            return i
    raise ValueError(f"no token holds character {char}")


def replay_example(tokenizer: Any, task: ModuleType, problem: Any) -> tuple[ReplayExample, set[int]]:
    """``problem``'s full solution as a replay example, and the stop tokens seen at its decisions."""
    full = task.written_solution(problem, problem.depth)
    ids, offsets = _encode(tokenizer, full)
    decisions, stops = [], set()
    for char, stop_text in decision_chars(task, problem):
        stop_ids, stop_offsets = _encode(tokenizer, stop_text)
        try:
            go, halt = _token_at(offsets, char), _token_at(stop_offsets, char)
        except ValueError:
            halt = go = -1
        if go < 0 or go != halt or ids[:go] != stop_ids[:halt]:
            raise LieError(
                f"supervised replay: {problem.question()!r}: stopping and going on are not one token's choice "
                f"at character {char} of {full!r} (the tokenizer merged across it)"
            )
        decisions.append(go)
        stops.add(stop_ids[halt])
    return ReplayExample(ids + [tokenizer.eos_token_id], tuple(decisions)), stops


def replay_examples(
    tokenizer: Any, task: ModuleType, problems: Sequence[Any]
) -> tuple[list[ReplayExample], list[int]]:
    """Every problem's replay example and the stop tokens (those that open the answer at a decision in
    any of them); a stop token that is also a decision's target would mask the target itself: one line."""
    examples, stops = [], set()
    for problem in problems:
        example, seen = replay_example(tokenizer, task, problem)
        examples.append(example)
        stops |= seen
    chosen = {ex.target[d] for ex in examples for d in ex.decisions}
    if chosen & stops:
        raise LieError(
            f"supervised replay: tokens {sorted(chosen & stops)} both stop and go on at a decision; "
            "the decision cannot be masked"
        )
    return examples, sorted(stops)


def masked_loss(logits: Any, labels: Any, decisions: Any, stop_ids: Sequence[int]) -> Any:
    """Token-mean cross-entropy of next-token ``logits`` against ``labels`` (-100: not trained), with the
    ``stop_ids`` logits left out wherever ``decisions`` (a bool mask over label positions) is set."""
    import torch

    logits = logits[:, :-1].float()
    labels, decisions = labels[:, 1:], decisions[:, 1:]
    banned = torch.zeros(logits.shape[-1], dtype=torch.bool, device=logits.device)
    banned[list(stop_ids)] = True
    logits = logits.masked_fill(decisions[..., None] & banned, float("-inf"))
    return torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=-100
    )
