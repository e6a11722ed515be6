"""Training dynamics of one run, per step, from the files both engines write (``lie.formats.runs``).

From the rollout dumps (``runs/<run>/rollouts/step-N.*.jsonl``, one line per training sample):
mean response length (tokens), accuracy, ``C_context``, ``R_context``; the share of responses
that ``R_red``'s test flags and the share of wrong answers below ``R_len``'s target (see below);
group diversity (``lie.analysis.diversity``, one group = one prompt's n samples, the rollouts'
``group`` field). From the metrics (``runs/<run>/metrics/``): the policy entropy ``actor/entropy``.

Flagged versus applied: a baseline run has both terms off, so its applied ``r_red`` / ``r_len``
are always 0 and say nothing about how often it loops or stops short. ``red_flagged`` and
``len_flagged`` apply the reward's tests with the config's knobs (``reward:`` and the run's
``extra_tokens``) to every run alike: ``max_ngram_count`` reaches ``theta`` (on correct answers
too unless ``red_on_correct`` is off), and a wrong answer's ``R_len`` would be negative
(``lie.core.reward.length_reward`` with the length term on; wrong answers without ``L_ref`` are left
out). ``red_applied`` / ``len_applied`` are the shares the run was actually penalised on.

Gaps and errors: a run folder without metrics or without rollouts is an error (a finished run of
either engine has both); a step without the entropy metric, or whose groups have no n-gram
window, gets ``None`` (plotted as a gap). At most ``max_points`` steps are read, evenly spaced with
the first and last kept, because a paper-scale run has ~2,000 steps of ~30 MB of rollouts each.
"""

from __future__ import annotations

import logging
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from lie.analysis.diversity import group_diversity, mean_of
from lie.config.layout import Layout
from lie.config.typed import Config
from lie.core.errors import LieError
from lie.core.reward import RewardConfig, length_reward, redundancy_fires
from lie.formats.runs import RunDir, read_metrics, read_rollouts, rollout_files

log = logging.getLogger(__name__)

ENTROPY = "actor/entropy"
NEEDED = ("step", "group", "response", "acc", "r_len", "r_red", "max_ngram_count", "c_context",
          "r_context", "num_tokens", "ref_len")  # fmt: skip


@dataclass
class StepStats:
    """One training step of one run (means over its samples unless named otherwise)."""

    step: int
    samples: int
    groups: int
    response_length: float
    accuracy: float
    c_context: float
    r_context: float
    red_applied: float  # share of samples with r_red < 0
    red_flagged: float  # share of samples R_red's test flags, applied or not
    wrong: int  # wrong answers (the denominator of the two len_ shares)
    len_applied: float | None  # share of wrong answers with r_len < 0
    len_flagged: float | None  # share of wrong answers below R_len's target, applied or not
    entropy: float | None  # actor/entropy of the step's metrics
    group_distinct: float | None  # mean over groups of distinct n-grams / n-grams
    group_overlap: float | None  # mean over groups of the mean pairwise Jaccard overlap


FIELDS = tuple(StepStats.__dataclass_fields__)


@dataclass
class RunDynamics:
    run: str
    steps: list[StepStats]
    total_steps: int  # steps with rollouts; ``len(steps)`` of them were read
    notes: list[str] = field(default_factory=list)

    def series(self, name: str) -> tuple[list[int], list[float | None]]:
        return [s.step for s in self.steps], [getattr(s, name) for s in self.steps]

    def rows(self) -> list[dict[str, Any]]:
        return [{"run": self.run, **asdict(s)} for s in self.steps]


def flag_config(config: Config, run: str) -> RewardConfig:
    """The run's reward knobs with both terms on: the tests ``*_flagged`` apply to every run."""
    return config.run(run).reward.replace(length_term=True, redundancy_term=True)


def red_flag(record: dict[str, Any], reward: RewardConfig) -> bool:
    """``R_red``'s test on a sample's most repeated n-gram (``lie.core.reward.redundancy_fires``)."""
    return redundancy_fires(int(record["max_ngram_count"]), None, bool(record["acc"]), reward)


def len_flag(record: dict[str, Any], reward: RewardConfig) -> bool | None:
    """Would a wrong answer get a negative ``R_len``? ``None`` for right answers and no ``L_ref``."""
    if record["acc"] or not record.get("ref_len"):
        return None
    return length_reward(False, int(record["num_tokens"]), int(record["ref_len"]), reward) < 0


def step_stats(
    step: int,
    records: Sequence[dict[str, Any]],
    reward: RewardConfig,
    entropy: float | None = None,
    unit: str = "word",
) -> StepStats:
    """The statistics of one step's samples (the module docstring defines each)."""
    count = len(records)
    groups: dict[str, list[str]] = defaultdict(list)
    for r in records:
        groups[str(r["group"])].append(r["response"])
    diversity = [group_diversity(texts, reward.n, unit) for texts in groups.values()]
    wrong = [r for r in records if not r["acc"]]
    flags = [f for f in (len_flag(r, reward) for r in wrong) if f is not None]
    return StepStats(
        step=step,
        samples=count,
        groups=len(groups),
        response_length=sum(r["num_tokens"] for r in records) / count,
        accuracy=sum(r["acc"] for r in records) / count,
        c_context=sum(r["c_context"] for r in records) / count,
        r_context=sum(r["r_context"] for r in records) / count,
        red_applied=sum(r["r_red"] < 0 for r in records) / count,
        red_flagged=sum(red_flag(r, reward) for r in records) / count,
        wrong=len(wrong),
        len_applied=sum(r["r_len"] < 0 for r in wrong) / len(wrong) if wrong else None,
        len_flagged=sum(flags) / len(flags) if flags else None,
        entropy=entropy,
        group_distinct=mean_of(d.distinct for d in diversity),
        group_overlap=mean_of(d.overlap for d in diversity),
    )


def pick_steps(steps: Sequence[int], max_points: int) -> list[int]:
    """At most ``max_points`` of ``steps``, evenly spaced, the first and the last always kept."""
    if max_points < 2:
        raise LieError(f"max_points must be >= 2, got {max_points}")
    if len(steps) <= max_points:
        return list(steps)
    last = len(steps) - 1
    picked = sorted({round(i * last / (max_points - 1)) for i in range(max_points)})
    return [steps[i] for i in picked]


def _check(records: list[dict[str, Any]], rundir: RunDir, step: int) -> None:
    for record in records:
        missing = [name for name in NEEDED if name not in record]
        if missing:
            raise LieError(
                f"{rundir.rollouts_dir}/step-{step:06d}.*.jsonl: a sample lacks {', '.join(missing)}; "
                "rollouts come from `lie train` (TRL) or the verl reward manager (lie.engines.verl.reward_manager)"
            )


def run_dynamics(
    config: Config, run: str, rundir: RunDir | None = None, max_points: int = 200
) -> RunDynamics:
    """Per-step statistics of ``run`` (errors and gaps: module docstring)."""
    rundir = rundir or Layout(config).run_dir(run)
    hint = f"train it (`lie train {run} --config ...`) or leave it out of `runs`"
    if not rundir.root.is_dir():
        raise LieError(f"{rundir.root}: run {run} has no folder; {hint}")
    metrics = read_metrics(rundir)
    if not metrics:
        raise LieError(f"{rundir.metrics_dir}: run {run} has no metrics (launch-*.jsonl); {hint}")
    files = rollout_files(rundir)
    if not files:
        raise LieError(f"{rundir.rollouts_dir}: run {run} has no rollouts (step-*.jsonl); {hint}")
    reward = flag_config(config, run)
    unit = reward.unit
    notes = []
    if unit == "token":
        unit = "word"
        notes.append("group diversity over words: rollouts keep no token ids")
    entropy = {m["step"]: m.get(ENTROPY) for m in metrics}
    if all(v is None for v in entropy.values()):
        notes.append(f"no {ENTROPY} in the metrics")
    steps = pick_steps(sorted(files), max_points)
    if len(steps) < len(files):
        notes.append(f"{len(steps)} of {len(files)} steps read (evenly spaced)")
    out = []
    for step in steps:
        records = read_rollouts(rundir, step)
        if not records:
            continue
        _check(records, rundir, step)
        value = entropy.get(step)
        value = float(value) if value is not None and not math.isnan(float(value)) else None
        out.append(step_stats(step, records, reward, value, unit))
    for note in notes:
        log.info("%s: %s", run, note)
    return RunDynamics(run, out, len(files), notes)


def phase_mean(dynamics: RunDynamics, name: str, phase: str) -> float | None:
    """Mean of a statistic over the first or last tenth of the steps read (at least one step)."""
    if phase not in ("first", "last"):
        raise ValueError(f"phase must be 'first' or 'last', got {phase!r}")
    k = max(1, len(dynamics.steps) // 10)
    chosen = dynamics.steps[:k] if phase == "first" else dynamics.steps[-k:]
    return mean_of(getattr(s, name) for s in chosen)
