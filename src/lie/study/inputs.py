"""What the study reads, from files only: rollouts, evaluation summaries, generations, the base model.

- :func:`run_curve`: per training step of one run (``runs/<run>/rollouts/``, one line per sample):
  accuracy, response length (tokens), ``C_context``, ``R_context``, and the share of looping
  responses, i.e. the share ``R_red``'s test flags (:func:`loop_test`). The test is applied with
  the config's ``reward:`` knobs to every arm alike: a baseline's applied ``r_red`` is always 0 and
  would say nothing about how often it loops.
- :func:`budget_accuracy`: ``avg@n`` of the benchmark at every budget (``scores/<key>/summary.json``).
- :func:`generation_stats`: the same per-response statistics on the evaluation generations, plus the
  accuracy of the strict checker (the last ``\\boxed{}`` integer, :func:`lie.tasks.arithmetic.check`)
  beside the pipeline's math-verify grade, which also accepts an unboxed last number.
- :func:`needed_tokens`: tokens of a full solution of each benchmark problem (the synthetic task's
  own generator and the base model's tokenizer, end-of-turn token included): the depth needed.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from lie import config as cfgmod
from lie.errors import LieError
from lie.layout import Layout
from lie.ngrams import NgramStats, ngram_stats, split_words
from lie.reward import RewardConfig, c_context, r_context, redundancy_penalty
from lie.runs import RunDir, read_rollouts


@dataclass(frozen=True)
class StepPoint:
    """One training step of one run: means over its samples (the shares are of all samples)."""

    step: int
    samples: int
    accuracy: float
    response_length: float
    c_context: float
    r_context: float
    loop_share: float
    len_applied: float  # share of samples whose R_len was negative (0 when the term is off)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def loop_config(config: dict[str, Any]) -> RewardConfig:
    """The config's reward knobs with ``R_red`` on for correct and wrong answers: the loop test."""
    knobs = dict(config.get("reward") or {})
    knobs.update(redundancy_term=True, red_on_correct=True, length_term=False)
    return RewardConfig.from_mapping(knobs, source="reward (study loop test)")


def loop_test(max_count: int, num_units: int, reward: RewardConfig) -> bool:
    """Would ``R_red`` fire on a response with this most repeated n-gram count and this many units?"""
    windows = max(0, num_units - reward.n + 1)
    stats = NgramStats(num_units=num_units, num_ngrams=windows, distinct=0, max_count=max_count)
    return redundancy_penalty(stats, True, reward) < 0


def _units(record: dict[str, Any], reward: RewardConfig) -> int:
    if reward.unit == "word":
        return len(split_words(record["response"]))
    return int(record["num_tokens"])


def run_curve(config: dict[str, Any], run: str) -> list[StepPoint]:
    """Per-step statistics of ``run``'s training samples, in step order."""
    rundir = RunDir(cfgmod.outdir(config), run)
    records = read_rollouts(rundir)
    if not records:
        raise LieError(
            f"run {run}: no rollouts in {rundir.rollouts_dir}; train it first (snakemake ... study)"
        )
    reward = loop_config(config)
    by_step: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for i, record in enumerate(records):
        for key in ("step", "acc", "num_tokens", "c_context", "r_context", "max_ngram_count", "r_len"):
            if key not in record:
                raise LieError(f"run {run}: rollout record {i} has no field {key!r}")
        by_step[int(record["step"])].append(record)
    points = []
    for step in sorted(by_step):
        group = by_step[step]
        size = len(group)
        points.append(
            StepPoint(
                step=step,
                samples=size,
                accuracy=sum(float(r["acc"]) for r in group) / size,
                response_length=sum(int(r["num_tokens"]) for r in group) / size,
                c_context=sum(float(r["c_context"]) for r in group) / size,
                r_context=sum(float(r["r_context"]) for r in group) / size,
                loop_share=sum(loop_test(int(r["max_ngram_count"]), _units(r, reward), reward) for r in group)
                / size,
                len_applied=sum(float(r["r_len"]) < 0 for r in group) / size,
            )
        )
    return points


def budget_accuracy(config: dict[str, Any], key: str, bench: str) -> dict[int, float]:
    """``avg@n`` of ``bench`` at every budget of ``key``'s evaluation summary."""
    path = Layout(config).summary(key)
    if not path.exists():
        raise LieError(f"{path} is missing; evaluate {key} first (snakemake ... study)")
    summary = json.loads(path.read_text(encoding="utf-8"))
    entry = (summary.get("benchmarks") or {}).get(bench)
    if entry is None:
        raise LieError(
            f"{path}: no benchmark {bench!r} (study.bench); it has {sorted(summary.get('benchmarks') or {})}"
        )
    metric = entry["avg@n"]
    return {int(budget): float(values[metric]) for budget, values in entry["budgets"].items()}


@dataclass(frozen=True)
class GenerationStats:
    samples: int
    response_length: float
    accuracy_boxed: float  # strict: the last \boxed{} integer equals the answer
    c_context: float
    r_context: float
    loop_share: float
    stopped: float  # share that ended with the end-of-turn token within max_tokens


def generation_stats(config: dict[str, Any], key: str, bench: str) -> GenerationStats:
    """Per-response statistics of ``key``'s generations on ``bench`` (its whole responses)."""
    from lie.jsonl import read_jsonl
    from lie.tasks.arithmetic import check

    path = Layout(config).generations(key, bench)
    if not path.exists():
        raise LieError(f"{path} is missing; generate with {key} first (snakemake ... study)")
    reward = loop_config(config)
    rows = []
    for lineno, obj in read_jsonl(path):
        try:
            text, ids, gold = obj["text"], obj["token_ids"], obj["gold"]
        except KeyError as exc:
            raise LieError(f"{path} line {lineno}: missing field {exc}") from None
        stats = ngram_stats(text, ids, n=reward.n, unit=reward.unit)
        try:
            correct = check(text, int(gold))
        except ValueError:
            raise LieError(
                f"{path} line {lineno}: gold {gold!r} is not an integer (arithmetic task?)"
            ) from None
        rows.append(
            (
                len(ids),
                correct,
                c_context(stats, reward),
                r_context(stats),
                redundancy_penalty(stats, True, reward) < 0,
                obj.get("finish_reason") == "stop",
            )
        )
    if not rows:
        raise LieError(f"{path}: no generations")
    size = len(rows)
    columns = list(zip(*rows))
    return GenerationStats(size, *(sum(float(v) for v in column) / size for column in columns))


def needed_tokens(config: dict[str, Any], bench: str, tokenizer_dir: str | Path) -> dict[str, float] | None:
    """Full-solution tokens of ``bench``'s problems (mean, min, max), or None when it is not synthetic."""
    from lie.data.spec import dataset_spec
    from lie.engines.generation import load_tokenizer
    from lie.tasks.arithmetic import generate

    spec = dataset_spec(config, bench)
    if not spec.synthetic:
        return None
    s = spec.synthetic
    problems = generate(s["count"], s["seed"], s["min_depth"], s["max_depth"])
    tokenizer = load_tokenizer(str(tokenizer_dir))
    lengths = [len(tokenizer(p.solution(), add_special_tokens=False)["input_ids"]) + 1 for p in problems]
    return {"mean": sum(lengths) / len(lengths), "min": float(min(lengths)), "max": float(max(lengths))}
