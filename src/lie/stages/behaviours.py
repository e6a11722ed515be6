"""Reasoning behaviours in generations (``lie behaviours``): phrase patterns, and optionally a judge.

Per response: the patterns' counts (``lie.analysis.behaviours``) and, with a judge model, the judge's
(``lie.stages.judge``); per file: a tally of both, rendered as one markdown row each. The per-response
lines (``file``, ``bench``, ``index``, ``sample``, ``counts``; with a judge also ``judge`` counts or
``judge_error``) go to an optional JSON-lines file, written atomically.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from lie.analysis.behaviours import Tally, load_classifier
from lie.analysis.judge import load_prompt
from lie.core.errors import LieError
from lie.formats.generations import read_texts
from lie.formats.jsonl import atomic_output, dumps
from lie.stages import judge as judge_stage


@dataclass(frozen=True)
class JudgeChoice:
    """The judge model and how it is asked (``lie behaviours --judge``)."""

    model: str
    engine: str = "vllm"
    prompt: str | None = None  # the judge prompt file (default: lie/analysis/judge_prompt.yaml)
    chunk_chars: int = 12000
    max_tokens: int = 1024
    engine_kwargs: dict[str, Any] = field(default_factory=dict)
    trust_remote_code: bool = False


def _cell(count: int, responses: int) -> str:
    return f"{count} ({100 * count / responses:.1f})" if responses else "—"


def count_behaviours(
    gen: Sequence[str],
    patterns: str | None = None,
    limit: int | None = None,
    out: str | None = None,
    judge: JudgeChoice | None = None,
) -> str:
    """Count the behaviours of every response of the ``gen`` files (the first ``limit`` of each); write
    the per-response lines to ``out``; return the table: one row per file (and per file, the judge's)."""
    if limit is not None and limit < 1:
        raise LieError(f"--limit must be >= 1, got {limit}")
    classifier = load_classifier(patterns)
    rows: list[dict[str, Any]] = []
    for path in gen:
        for item in read_texts(path)[:limit]:
            rows.append({"file": path, **item, "counts": classifier.count(item["text"])})
    judged: dict[str, Tally] = {}
    if judge is not None:
        prompt = load_prompt(judge.prompt)
        results = judge_stage.judge_texts(
            [row["text"] for row in rows],
            classifier,
            judge.model,
            engine=judge.engine,
            prompt=prompt,
            chunk_chars=judge.chunk_chars,
            max_tokens=judge.max_tokens,
            engine_kwargs=dict(judge.engine_kwargs),
            trust_remote_code=judge.trust_remote_code,
        )
        for row, result in zip(rows, results, strict=True):
            row["judge_prompt_version"] = prompt.version
            if result.counts is None:
                row["judge_error"] = result.error
            else:
                row["judge"] = result.counts
                judged.setdefault(row["file"], Tally(classifier.names)).add(result.counts)
    if out:
        with atomic_output(out) as stream:
            for row in rows:
                stream.write(dumps({k: v for k, v in row.items() if k != "text"}) + "\n")
    return behaviours_table(gen, rows, classifier.names, judged if judge is not None else None)


def behaviours_table(
    gen: Sequence[str], rows: Sequence[dict[str, Any]], names: Sequence[str], judged: dict[str, Tally] | None
) -> str:
    """The markdown table: per file its responses and, per behaviour, count (per 100 responses)."""
    lines = ["| file | responses | " + " | ".join(names) + " |", "|---|---:|" + "---:|" * len(names)]
    for path in gen:
        patterns = Tally(tuple(names))
        for row in rows:
            if row["file"] == path:
                patterns.add(row["counts"])
        cells = [_cell(patterns.counts[n], patterns.responses) for n in names]
        lines.append(f"| {path} | {patterns.responses} | " + " | ".join(cells) + " |")
        if judged is not None:
            j = judged.get(path, Tally(tuple(names)))
            cells = [_cell(j.counts[n], j.responses) for n in names]
            lines.append(
                f"| {path} (judge, {j.responses} read) | {patterns.responses} | " + " | ".join(cells) + " |"
            )
    lines += [
        "",
        "cells: occurrences (per 100 responses); an occurrence is a sentence (patterns) or a judged passage",
    ]
    return "\n".join(lines)
