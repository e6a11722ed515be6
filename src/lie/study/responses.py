"""Per-response columns of the study's evaluations: depth needed and reached, n-gram states, grades.

``lie study-responses`` writes one JSON line per generated sample, joining three files the pipeline
already wrote, and adding what only the task can say:

- from the benchmark's data file (``lie data``): the problem, read back from its question text by
  the synthetic task of the benchmark (``parse_question`` of ``lie.tasks.chain``, say):
  ``depth_needed``, ``tokens_needed`` (its full solution through the model's tokenizer, end-of-turn
  token included);
- from the generations (``lie generate``): the response, read step by step against the problem
  (the task's ``trace``): ``depth_written``, ``depth_reached``, ``steps_right``, ``repeats``,
  ``boxed`` and the strict grade ``strict`` (the last boxed integer is the answer);
  and its n-gram states with the config's ``reward:`` knobs: ``c_context``, ``r_context`` and
  ``loop`` (``R_red``'s test fires, applied to every arm alike);
- from the scores (``lie evaluate``): the pipeline's grade at every budget, ``correct``
  ({budget: bool}), copied, not re-graded.

The study's gates and report read these lines only; nothing downstream regenerates or re-grades.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from lie.config.typed import Config
from lie.core.errors import LieError
from lie.core.ngrams import ngram_stats, split_words
from lie.core.reward import RewardConfig, c_context, r_context, redundancy_fires
from lie.formats.graded import read_graded_lines
from lie.formats.jsonl import atomic_output, read_jsonl
from lie.formats.rows import read_rows
from lie.tasks import task_module

log = logging.getLogger(__name__)

COLUMNS = (
    "bench", "index", "sample", "depth_needed", "depth_written", "depth_reached", "steps_right",
    "repeats", "boxed", "strict", "num_tokens", "tokens_needed", "finish_reason", "c_context",
    "r_context", "loop", "correct",
)  # fmt: skip


def loop_config(config: Config) -> RewardConfig:
    """The config's reward knobs with ``R_red`` on for correct and wrong answers: the loop test."""
    return config.reward.replace(redundancy_term=True, red_on_correct=True, length_term=False)


def loop_test(max_count: int, num_units: int, reward: RewardConfig) -> bool:
    """Would ``R_red`` fire on a response with this most repeated n-gram count and this many units?"""
    return redundancy_fires(max_count, num_units, True, reward)


def units(text: str, num_tokens: int, reward: RewardConfig) -> int:
    """Length in the reward's unit (tokens, or words of the text)."""
    return len(split_words(text)) if reward.unit == "word" else num_tokens


def bench_task(config: Config, bench: str) -> Any:
    """The task module of a synthetic benchmark, if it can read responses back (``trace``)."""
    name = config.dataset(bench).synthetic_task
    task = task_module(name) if name else None
    if task is None or not hasattr(task, "trace"):
        raise LieError(f"datasets.eval.{bench}: the study reads depth from a synthetic chain or pointer task")
    return task


def read_traced_problems(
    config: Config, paths: Iterable[str | Path]
) -> dict[tuple[str, int], tuple[Any, Any]]:
    """``(bench, index) -> (task, problem)`` of benchmark data files (rows of ``lie data``)."""
    problems: dict[tuple[str, int], tuple[Any, Any]] = {}
    tasks: dict[str, Any] = {}
    for path in paths:
        for number, row in enumerate(read_rows(path, ("data_source", "extra_info"), only=True)):
            bench, extra = str(row["data_source"]), row.get("extra_info") or {}
            if bench not in tasks:
                tasks[bench] = bench_task(config, bench)
            try:
                problem = tasks[bench].parse_question(extra.get("question") or "")
            except ValueError as exc:
                raise LieError(f"{path} row {number}: {exc}") from None
            index = extra.get("index")
            if not isinstance(index, int) or isinstance(index, bool):
                raise LieError(
                    f"{path} row {number}: field 'extra_info.index' must be an integer, got {index!r}"
                )
            problems[(bench, index)] = (tasks[bench], problem)
    if not problems:
        raise LieError(f"no problems in {', '.join(str(p) for p in paths)}")
    return problems


def read_grades(path: str | Path) -> dict[tuple[str, int, int], dict[str, bool]]:
    """``(bench, index, sample) -> {budget: correct}`` of a ``lie evaluate`` scores file."""
    return {
        (line["bench"], line["index"], line["sample"]): {
            str(b): g["correct"] for b, g in line["grades"].items()
        }
        for line in read_graded_lines(path)
    }


def response_row(
    obj: dict[str, Any],
    problem: Any,
    task: Any,
    correct: dict[str, bool],
    tokens_needed: int,
    reward: RewardConfig,
) -> dict[str, Any]:
    """The columns of one generated sample (a line of ``lie generate``)."""
    text, ids = obj["text"], obj["token_ids"]
    trace = task.trace(problem, text)
    stats = ngram_stats(text, ids, n=reward.n, unit=reward.unit)
    return {
        "bench": obj["bench"],
        "index": obj["index"],
        "sample": obj["sample"],
        "depth_needed": trace.depth_needed,
        "depth_written": trace.depth_written,
        "depth_reached": trace.depth_reached,
        "steps_right": trace.steps_right,
        "repeats": trace.repeats,
        "boxed": trace.boxed,
        "strict": trace.boxed == problem.answer,
        "num_tokens": len(ids),
        "tokens_needed": tokens_needed,
        "finish_reason": obj.get("finish_reason"),
        "c_context": c_context(stats, reward),
        "r_context": r_context(stats),
        "loop": loop_test(stats.max_count, units(text, len(ids), reward), reward),
        "correct": correct,
    }


def response_rows(
    config: Config,
    gen_paths: Sequence[str | Path],
    scores_path: str | Path,
    data_paths: Sequence[str | Path],
    tokenizer: Any,
) -> list[dict[str, Any]]:
    """Every sample of ``gen_paths`` with its columns (:data:`COLUMNS`)."""
    problems = read_traced_problems(config, data_paths)
    grades = read_grades(scores_path)
    reward = loop_config(config)
    needed: dict[tuple[str, int], int] = {}
    rows = []
    for path in gen_paths:
        for lineno, obj in read_jsonl(path):
            where = f"{path} line {lineno}"
            try:
                key = (str(obj["bench"]), int(obj["index"]))
                sample_key = (*key, int(obj["sample"]))
                obj["text"], obj["token_ids"]
            except (KeyError, TypeError, ValueError) as exc:
                raise LieError(f"{where}: not a line of lie generate ({exc})") from None
            if key not in problems:
                raise LieError(f"{where}: problem {key[1]} of {key[0]} is in no --data file")
            if sample_key not in grades:
                raise LieError(
                    f"{where}: sample {sample_key} has no line in {scores_path}; evaluate it first"
                )
            task, problem = problems[key]
            if key not in needed:
                ids = tokenizer(problem.solution(), add_special_tokens=False)["input_ids"]
                needed[key] = len(ids) + 1
            rows.append(response_row(obj, problem, task, grades[sample_key], needed[key], reward))
    if not rows:
        raise LieError(f"no generations in {', '.join(str(p) for p in gen_paths)}")
    log.info("%d responses of %d problems", len(rows), len(needed))
    return rows


def write_responses(path: str | Path, rows: Iterable[dict[str, Any]]) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with atomic_output(path) as out:
        for row in rows:
            out.write(json.dumps(row, sort_keys=False) + "\n")


def read_responses(path: str | Path) -> list[dict[str, Any]]:
    """Lines written by :func:`write_responses`, checked for the columns."""
    if not Path(path).exists():
        raise LieError(f"{path} is missing; run lie study-responses (snakemake ... study)")
    rows = []
    for lineno, obj in read_jsonl(path):
        missing = [c for c in COLUMNS if c not in obj]
        if missing:
            raise LieError(f"{path} line {lineno}: no column(s) {', '.join(missing)}")
        rows.append(obj)
    if not rows:
        raise LieError(f"{path}: no responses")
    return rows
