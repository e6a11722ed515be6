"""What the study report reads, from files only: the runs' rollouts and the per-response columns.

- :func:`run_curve`: per training step of one run (``runs/<run>/rollouts/``, one line per sample):
  accuracy, response length (tokens), ``C_context``, ``R_context``, the share of looping responses
  (``R_red``'s test with the config's ``reward:`` knobs, applied to every arm alike: a baseline's
  applied ``r_red`` is always 0 and would say nothing about how often it loops), the shares of
  samples whose applied ``R_len`` / ``R_red`` were negative, and the *trap index*: the share of
  prompt groups (the rollout records' ``group``) whose samples all got the same grade, so that
  GRPO's advantage from accuracy is zero there.
- :func:`eval_summary`: one evaluated model on one condition's test problems, from the lines of
  ``lie study-responses`` (grades copied from ``lie evaluate``, depth columns): accuracy at every
  budget, depth written and reached, n-gram states, looping.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from lie.config.layout import Layout
from lie.config.typed import Config
from lie.core.errors import LieError
from lie.formats.runs import read_rollouts
from lie.study.responses import loop_config, loop_test, units
from lie.study.trap import trap_index

ROLLOUT_FIELDS = (
    "step",
    "group",
    "acc",
    "num_tokens",
    "c_context",
    "r_context",
    "max_ngram_count",
    "r_len",
    "r_red",
    "reward",
)
# Rewards closer than this count as equal: the group's advantage is then zero (std 0).
REWARD_TIE = 1e-9


@dataclass(frozen=True)
class StepPoint:
    """One training step of one run: means over its samples (the shares are of all samples)."""

    step: int
    samples: int
    groups: int
    accuracy: float
    trap_index: float
    zero_adv_share: float  # share of groups whose total rewards are all equal: no advantage at all
    response_length: float
    c_context: float
    r_context: float
    loop_share: float
    len_applied: float  # share of samples whose R_len was negative (0 when the term is off)
    red_applied: float  # share of samples whose R_red was negative (0 when the term is off)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def zero_advantage_share(rewards: Sequence[Sequence[float]]) -> float:
    """Share of groups whose rewards all tie (within :data:`REWARD_TIE`): GRPO learns nothing there."""
    flags = [max(g) - min(g) <= REWARD_TIE for g in rewards]
    return sum(flags) / len(flags) if flags else float("nan")


def step_point(step: int, group: Sequence[dict[str, Any]], reward: Any) -> StepPoint:
    by_prompt: dict[str, list[bool]] = defaultdict(list)
    rewards: dict[str, list[float]] = defaultdict(list)
    for r in group:
        by_prompt[str(r["group"])].append(bool(r["acc"]))
        rewards[str(r["group"])].append(float(r["reward"]))
    return StepPoint(
        step=step,
        samples=len(group),
        groups=len(by_prompt),
        accuracy=_mean([float(r["acc"]) for r in group]),
        trap_index=trap_index(by_prompt.values()),
        zero_adv_share=zero_advantage_share(list(rewards.values())),
        response_length=_mean([int(r["num_tokens"]) for r in group]),
        c_context=_mean([float(r["c_context"]) for r in group]),
        r_context=_mean([float(r["r_context"]) for r in group]),
        loop_share=_mean(
            [
                loop_test(
                    int(r["max_ngram_count"]), units(r["response"], int(r["num_tokens"]), reward), reward
                )
                for r in group
            ]
        ),  # fmt: skip
        len_applied=_mean([float(r["r_len"]) < 0 for r in group]),
        red_applied=_mean([float(r["r_red"]) < 0 for r in group]),
    )


def run_curve(config: Config, run: str) -> list[StepPoint]:
    """Per-step statistics of ``run``'s training samples, in step order."""
    rundir = Layout(config).run_dir(run)
    records = read_rollouts(rundir)
    if not records:
        raise LieError(
            f"run {run}: no rollouts in {rundir.rollouts_dir}; train it first (snakemake ... study)"
        )
    reward = loop_config(config)
    by_step: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for i, record in enumerate(records):
        for key in (*ROLLOUT_FIELDS, "response"):
            if key not in record:
                raise LieError(f"run {run}: rollout record {i} has no field {key!r}")
        by_step[int(record["step"])].append(record)
    return [step_point(step, by_step[step], reward) for step in sorted(by_step)]


@dataclass(frozen=True)
class EvalSummary:
    """One model's responses to one condition's test problems (means over samples)."""

    samples: int
    accuracy: dict[int, float]  # budget -> share graded correct (the pipeline's grade)
    strict: float  # the last boxed integer is the answer (whole responses)
    length: float
    tokens_needed: float
    depth_needed: float
    depth_written: float
    depth_reached: float
    full_written: float  # share that wrote at least the steps needed
    full_reached: float  # share whose steps were all right, to the full depth
    c_context: float
    r_context: float
    loop_share: float
    repeats: float


def eval_summary(rows: Sequence[dict[str, Any]], depths: tuple[int, int], where: str) -> EvalSummary:
    """Means over the rows whose depth needed is in ``depths`` (inclusive)."""
    mine = [r for r in rows if depths[0] <= r["depth_needed"] <= depths[1]]
    if not mine:
        raise LieError(f"{where}: no responses to problems of depth {depths[0]}-{depths[1]}")
    budgets = sorted({int(b) for b in mine[0]["correct"]})

    def mean(column: str) -> float:
        return _mean([float(r[column]) for r in mine])

    return EvalSummary(
        samples=len(mine),
        accuracy={b: _mean([float(r["correct"][str(b)]) for r in mine]) for b in budgets},
        strict=mean("strict"),
        length=mean("num_tokens"),
        tokens_needed=mean("tokens_needed"),
        depth_needed=mean("depth_needed"),
        depth_written=mean("depth_written"),
        depth_reached=mean("depth_reached"),
        full_written=_mean([float(r["depth_written"] >= r["depth_needed"]) for r in mine]),
        full_reached=_mean([float(r["depth_reached"] >= r["depth_needed"]) for r in mine]),
        c_context=mean("c_context"),
        r_context=mean("r_context"),
        loop_share=mean("loop"),
        repeats=mean("repeats"),
    )
