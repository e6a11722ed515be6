"""Behaviours a mutation run left untested: one-line semantic mutants of src/lie that the whole suite
passed. Each test names the mutant it fails on (each was applied by hand and seen to fail here);
the other survivors are killed in their module's own tests (tests/test_report_intervals.py,
tests/test_reward_engines.py, tests/test_pipeline.py)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from lie.config import load_config
from lie.core.errors import LieError
from lie.formats.rows import Item, answer_of, make_row
from lie.grading.items import grade_item
from lie.stages.evaluate import summarize_scores
from lie.stages.plan import checkpoints
from lie.tasks import arithmetic

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def smoke_config():
    return load_config(REPO / "workflow" / "configs" / "smoke.yaml")


def test_the_answer_of_an_arithmetic_response_is_its_last_boxed_integer():
    """Mutant: ``boxed_answer`` took the first ``\\boxed{}`` (a response that corrects itself was graded
    on its first, wrong, answer)."""
    response = "1 + 2 = 4, so \\boxed{4}. Check: 1 + 2 = 3. The answer is \\boxed{3}."
    assert arithmetic.boxed_answer(response) == 3
    assert arithmetic.check(response, 3) and not arithmetic.check(response, 4)
    assert arithmetic.boxed_answer("no box here") is None


def _score_line(index: int, num_tokens: int, budgets: tuple[int, ...]) -> dict:
    grades = {str(b): {"correct": True, "status": "ok"} for b in budgets}
    return {"bench": "arith-test", "index": index, "sample": 0, "num_tokens": num_tokens, "grades": grades}


def test_a_sample_of_exactly_the_budget_is_not_counted_as_truncated(smoke_config):
    """Mutant: ``n_truncated`` counted ``num_tokens >= budget``. A sample of at most B tokens is graded
    whole at budget B (``budget_texts``, docs/evaluation.md): only a longer one is cut."""
    budgets = (16, 48)
    lines = [_score_line(i, n, budgets) for i, n in enumerate((15, 16, 17, 48))]
    summary = summarize_scores(lines, budgets, smoke_config)["benchmarks"]["arith-test"]
    assert summary["budgets"]["16"]["n_truncated"] == 2  # 17 and 48 tokens
    assert summary["budgets"]["48"]["n_truncated"] == 0  # 48 tokens fit a 48-token budget
    assert summary["mean_tokens"] == {"16": (15 + 16 + 16 + 16) / 4, "48": (15 + 16 + 17 + 48) / 4}


def _choice_row(gold: str) -> dict:
    item = Item("Which is two?", "B", ("one", "two", "three", "four"))
    row = make_row("arith-choice", "choice", "test", 0, item, "{question}\n\n{choices}")
    row["reward_model"]["ground_truth"] = gold
    return row


@pytest.mark.parametrize("gold", ["B", "b", " b "])
def test_a_gold_letter_is_read_whatever_its_case(gold):
    """Mutant: ``answer_of`` refused a lower-case gold letter (``b`` among ``A``-``D``), which the
    grader reads as ``B``: a source that writes its letters in lower case could not be trained on."""
    row = _choice_row(gold)
    answer = answer_of(row, "row 0")
    assert (answer.gold, answer.kind, answer.letters) == (gold, "choice", ("A", "B", "C", "D"))
    item = {
        "response": "It is \\boxed{B}.",
        "gold": answer.gold,
        "kind": "choice",
        "choices": list(answer.letters),
    }
    assert grade_item(item).correct
    assert not grade_item({**item, "response": "It is \\boxed{C}."}).correct
    with pytest.raises(LieError, match="'e' is not one of the row's letters"):
        answer_of(_choice_row("e"), "row 0")


def verl_saves(steps: int, save_freq: int) -> int:
    """The steps at which verl 0.9.1's trainer saves: every ``save_freq``-th step and the last."""
    return len({step for step in range(1, steps + 1) if step % save_freq == 0} | {steps})


def test_the_plan_counts_the_checkpoints_verl_saves(smoke_config):
    """Mutant: the plan's checkpoint count off by one (one save too many where ``save_freq`` divides the
    steps, or the last step's save forgotten where it does not): the plan's disk figure follows it."""
    run = smoke_config.run("smoke_gspo_lie")  # eval_step: final keeps the newest keep_checkpoints
    for save_freq in (1, 2, 3, 50):
        s = dataclasses.replace(run, save_freq=save_freq, keep_checkpoints=2)
        for steps in (1, 2, 3, 4, 5, 7, 8, 100, 101):
            saves = verl_saves(steps, save_freq)
            assert checkpoints(s, steps) == (saves, min(2, saves)), (steps, save_freq)
