"""Golden numbers of the smoke run (tests/smoke_run.py), read from its files.

The CPU runs are seeded and reproduce: tests/test_verl_main_ppo.py trains the parent twice to the
same metrics and the same weights, and runs the vLLM rollout twice alike. So the numbers below, written
down from the run of 2026-12-07 on a 2-vCPU x86-64 VM, are what the DAG gives; a change of the reward,
the sampling, the training step, the SFT stage of the tiny model or the grading moves them, and a
deliberate one updates them here (its commit saying why). The tolerances are the float32 resolution of a
logged mean and no more: one answer graded otherwise moves a step's reward mean by 1/16, one token more
in one sample its mean length by 1/16; an evaluated model's Avg@n is a count over problems x samples,
held to the last sample.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from smoke_run import CHILD, PARENT

from lie.formats.runs import read_metrics, read_rollouts

pytestmark = pytest.mark.slow  # the first test to ask for `smoke` builds the DAG (tests/conftest.py)

# per step 1-4 of each verl run: critic/score/mean (the mean reward of the step's 16 samples) and
# response_length/mean (tokens)
REWARD_MEANS = {
    PARENT: [-0.0006567584350705147, 0.0, -7.492500299122185e-05, -0.00029970004106871784],
    CHILD: [0.0, 0.0, 0.0, 0.0],  # every sample at its 64-token limit, above L_ref - tolerance
}
LENGTH_MEANS = {PARENT: [21.875, 46.625, 48.0, 48.0], CHILD: [64.0, 64.0, 64.0, 64.0]}
# evaluated model -> benchmark -> budget -> (Avg@n, mean tokens); arith-test: 12 problems x 4 samples,
# arith-choice: 8 x 1. The tiny model gets one arith-test sample of 48 right; the trained runs none.
EVALUATED = {
    "tiny": {
        "arith-test": {"16": (1 / 48, 12.666666666666666), "48": (1 / 48, 13.229166666666666)},
        "arith-choice": {"16": (0.0, 14.875), "48": (0.0, 16.25)},
    },
    PARENT: {
        "arith-test": {"16": (0.0, 16.0), "48": (0.0, 48.0)},
        "arith-choice": {"16": (0.0, 16.0), "48": (0.0, 48.0)},
    },
}
CHILD_EVALUATED = {  # every sample at the evaluation's 48-token limit
    "arith-test": {"16": (0.0, 16.0), "48": (0.0, 48.0)},
    "arith-choice": {"16": (0.0, 16.0), "48": (0.0, 48.0)},
}
RELATIVE = (
    1e-5  # a logged float32 mean; one token more in one sample moves a step's reward mean by ~1e-3 of it
)


def step_numbers(out: Path, run: str) -> tuple[list[float], list[float]]:
    """A verl run's per-step reward and length means (its metrics), checked against its rollouts: verl's
    logged reward mean is the mean of the rewards our manager returned."""
    metrics = read_metrics(out / "runs" / run)
    assert [m["step"] for m in metrics] == [1, 2, 3, 4]
    rewards = [m["critic/score/mean"] for m in metrics]
    rollouts = read_rollouts(out / "runs" / run)
    by_step = [[r["reward"] for r in rollouts if r["step"] == step] for step in (1, 2, 3, 4)]
    assert [sum(x) / len(x) for x in by_step] == pytest.approx(rewards, rel=RELATIVE, abs=1e-9)
    return rewards, [m["response_length/mean"] for m in metrics]


def evaluated_numbers(out: Path, key: str) -> dict:
    """benchmark -> budget -> (Avg@n, mean tokens) of an evaluated model (``lie evaluate``'s summary)."""
    summary = json.loads((out / "scores" / key / "summary.json").read_text(encoding="utf-8"))
    return {
        bench: {
            budget: (entry["budgets"][budget][entry["avg@n"]], entry["mean_tokens"][budget])
            for budget in entry["budgets"]
        }
        for bench, entry in summary["benchmarks"].items()
    }


def _flat(numbers: dict) -> dict:
    return {
        (bench, budget, i): v
        for bench, by in numbers.items()
        for budget, pair in by.items()
        for i, v in enumerate(pair)
    }


def test_the_verl_runs_step_rewards_and_lengths_are_the_golden_ones(smoke):
    rewards, lengths = step_numbers(smoke.out, PARENT)
    assert rewards == pytest.approx(REWARD_MEANS[PARENT], rel=RELATIVE, abs=1e-12)
    assert lengths == LENGTH_MEANS[PARENT]


def timeouts(out: Path, key: str) -> int:
    """Samples whose grading ran out of time (they read as wrong: only on a machine loaded far past its
    cores, ``evaluation.grade_timeout_s`` being 20 s a sample)."""
    summary = json.loads((out / "scores" / key / "summary.json").read_text(encoding="utf-8"))
    return sum(b["n_timeouts"] for e in summary["benchmarks"].values() for b in e["budgets"].values())


def test_every_evaluated_models_avg_at_n_is_the_golden_one(smoke):
    for key, golden in EVALUATED.items():
        got = _flat(evaluated_numbers(smoke.out, key))
        assert got == pytest.approx(_flat(golden), abs=1e-12), (
            key,
            f"grading timeouts: {timeouts(smoke.out, key)}",
        )


@pytest.mark.heavy
def test_the_continual_runs_numbers_are_the_golden_ones(smoke_child):
    rewards, lengths = step_numbers(smoke_child.out, CHILD)
    assert rewards == pytest.approx(REWARD_MEANS[CHILD], rel=RELATIVE, abs=1e-12)
    assert lengths == LENGTH_MEANS[CHILD]
    assert _flat(evaluated_numbers(smoke_child.out, CHILD)) == pytest.approx(
        _flat(CHILD_EVALUATED), abs=1e-12
    )
