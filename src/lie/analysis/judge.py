"""Reasoning behaviours counted by a judge model (``lie behaviours --judge --model PATH``).

An alternative to the phrase patterns of :mod:`lie.analysis.behaviours` for readers who want a
model's judgement: each response (in parts of at most ``chunk_chars`` characters, cut between
sentences) goes into the prompt of ``judge_prompt.yaml`` with the behaviours' descriptions from
``behaviours.yaml``; the judge answers with a JSON object of counts, and the parts' counts are
added. Running the judge model is a stage (``lie.stages.judge``); here are the prompt, the parts
and the reading of its answers. An answer that cannot be read is kept as an error, never counted as
zero.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lie.analysis.behaviours import Classifier, split_sentences
from lie.config.yamlio import load_yaml_mapping
from lie.core.errors import LieError

log = logging.getLogger(__name__)

PROMPT_FILE = Path(__file__).with_name("judge_prompt.yaml")
_OBJECT = re.compile(r"\{[^{}]*\}")


@dataclass(frozen=True)
class JudgePrompt:
    template: str
    version: Any
    source: str

    def render(self, response: str, classifier: Classifier) -> str:
        """The prompt text for one response part (definitions first, so a response cannot inject them)."""
        definitions = "\n".join(f"- {name}: {classifier.descriptions[name]}" for name in classifier.names)
        keys = json.dumps(dict.fromkeys(classifier.names, 0))
        text = self.template.replace("{definitions}", definitions).replace("{keys}", keys)
        return text.replace("{response}", response)


def load_prompt(path: str | Path | None = None) -> JudgePrompt:
    source = Path(path) if path is not None else PROMPT_FILE
    data = load_yaml_mapping(source, what="the judge prompt")
    template = data.get("template")
    if not isinstance(template, str) or "{response}" not in template:
        raise LieError(f"{source}: 'template' must be a string with a {{response}} placeholder")
    return JudgePrompt(template, data.get("version"), str(source))


def chunks(text: str, chunk_chars: int) -> list[str]:
    """``text`` in parts of at most ``chunk_chars`` characters, cut between sentences (a longer sentence is cut)."""
    if chunk_chars < 1:
        raise LieError(f"chunk_chars must be >= 1, got {chunk_chars}")
    parts: list[str] = []
    current = ""
    for sentence in split_sentences(text):
        while len(sentence) > chunk_chars:
            if current:
                parts.append(current)
                current = ""
            parts.append(sentence[:chunk_chars])
            sentence = sentence[chunk_chars:]
        if current and len(current) + 1 + len(sentence) > chunk_chars:
            parts.append(current)
            current = ""
        current = f"{current} {sentence}" if current else sentence
    if current or not parts:
        parts.append(current)
    return parts


class JudgeAnswerError(ValueError):
    """A judge's answer without a readable JSON object of counts."""


def parse_answer(text: str, names: Sequence[str]) -> dict[str, int]:
    """The counts in a judge's answer: its last JSON object with every behaviour as a count >= 0."""
    tail = text.rsplit("</think>", 1)[-1]
    candidates = _OBJECT.findall(tail)
    if not candidates:
        raise JudgeAnswerError("no JSON object in the answer")
    problems = []
    for candidate in reversed(candidates):
        try:
            obj = json.loads(candidate)
        except json.JSONDecodeError:
            problems.append(f"not JSON: {candidate[:60]!r}")
            continue
        counts = {}
        for name in names:
            value = obj.get(name)
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            if isinstance(value, str) and value.strip().isdigit():
                value = int(value.strip())
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                problems.append(f"{name} is {value!r}, not a count")
                break
            counts[name] = value
        else:
            return counts
    raise JudgeAnswerError("; ".join(problems))


@dataclass
class Judgement:
    counts: dict[str, int] | None  # None when some part's answer could not be read
    parts: int
    error: str | None = None
    answers: list[str] | None = None


def judgements(parts: Sequence[Sequence[str]], answers: Sequence[str], classifier: Classifier,
               keep_answers: bool = False) -> list[Judgement]:  # fmt: skip
    """The judge's answers to every part (in order) added up per response; an unreadable one is an error."""
    results = [Judgement(dict.fromkeys(classifier.names, 0), len(p)) for p in parts]
    owners = [i for i, pieces in enumerate(parts) for _ in pieces]
    for i, answer in zip(owners, answers, strict=True):
        result = results[i]
        if keep_answers:
            result.answers = [*(result.answers or []), answer]
        if result.counts is None:
            continue
        try:
            for name, value in parse_answer(answer, classifier.names).items():
                result.counts[name] += value
        except JudgeAnswerError as exc:
            result.counts, result.error = None, str(exc)
    failed = sum(r.counts is None for r in results)
    if failed:
        log.warning(
            "%d of %d responses have an unreadable judge answer (kept as errors)", failed, len(results)
        )
    return results
