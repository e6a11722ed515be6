"""The one sampling loop in resumable shards, under ``lie generate`` (benchmarks) and ``lie reflen``.

Prompts are chat messages with an index; every (prompt, sample) pair of the flat order is one
engine request with its own seed, ``sample_seed(seed, index, sample)``, so a shard draws the same
samples whichever shards ran before it. The work goes in resumable shards of samples
(``lie.formats.resumable``); the engine is loaded once, on the first shard that needs it, so that a
finished run that is only being collected never loads a model.

Samples are assigned to shards by expected tokens (:func:`shard_assignment`): one engine call waits for its longest
sample, so samples of about the same expected length go together, longest first; a shard holds at
least ``shard_size`` samples (a call runs as many at once as before), and short samples go on
joining it up to ``shard_size`` x the mean expected tokens (at most 4 x ``shard_size`` samples).
The expected length of a prompt's samples is its reference length where every prompt has one
(``Prompt.expected``: a training row's ``extra_info.avg_response_len``), else the prompt's
length in characters (longer problems tend to take longer answers; equal lengths keep the flat
order). The records come back in the flat order whatever the assignment.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from lie.core.errors import LieError
from lie.engines.generation import Completion, SamplingSettings, sample_seed, token_budget
from lie.formats.prompts import prompt_token_ids
from lie.formats.resumable import assign_shards, assignment_digest, iter_assigned, run_assigned


@dataclass(frozen=True)
class Prompt:
    """What to sample from: one problem's chat messages, ``where`` naming it in errors."""

    index: int
    messages: list[dict[str, str]]
    where: str
    expected: float | None = None  # its samples' expected length in tokens (a reference length), if known


@dataclass(frozen=True)
class Draw:
    """How every sample is drawn: ``sampling.n`` samples a prompt from base ``seed``."""

    sampling: SamplingSettings
    seed: int
    enable_thinking: bool | None = None
    max_prompt_tokens: int | None = None


@dataclass(frozen=True)
class Drawn:
    """One sample: its prompt, its number among the prompt's samples, the prompt's length, the completion."""

    prompt: Prompt
    sample: int
    prompt_tokens: int
    completion: Completion


ASSIGNMENT_RULE = (
    "samples longest expected first (reference length if every prompt has one, else prompt characters; "
    "ties in flat order), >= shard_size a shard, short ones up to shard_size x mean tokens, <= 4 x shard_size"
)


def expected_tokens(prompts: Sequence[Prompt], max_tokens: int) -> list[int]:
    """Each prompt's expected sample length: its reference length (capped at ``max_tokens``) where
    every prompt has one, else its length in characters (a relative measure: only ratios matter)."""
    if prompts and all(p.expected is not None for p in prompts):
        return [max(1, min(max_tokens, round(float(p.expected or 0)))) for p in prompts]
    return [max(1, sum(len(m.get("content", "")) for m in p.messages)) for p in prompts]


def shard_assignment(prompts: Sequence[Prompt], draw: Draw, shard_size: int) -> list[list[int]]:
    """The shards of the flat (prompt, sample) order, by expected tokens: a function of the inputs alone."""
    n = draw.sampling.n
    per_prompt = expected_tokens(prompts, draw.sampling.max_tokens)
    return assign_shards([per_prompt[k // n] for k in range(len(prompts) * n)], shard_size)


def draw_shard(engine: Any, prompts: Sequence[Prompt], draw: Draw, shard: Sequence[int]) -> list[Drawn]:
    """Samples ``shard`` of the flat (prompt, sample) order, one seeded engine request each."""
    n = draw.sampling.n
    units = [(prompts[k // n], k % n) for k in shard]
    ids: dict[int, list[int]] = {}
    for prompt, _ in units:
        if prompt.index not in ids:
            ids[prompt.index] = prompt_token_ids(
                engine.tokenizer, prompt.messages, draw.enable_thinking, draw.max_prompt_tokens
            )
            token_budget(len(ids[prompt.index]), draw.sampling.max_tokens, engine.max_model_len, prompt.where)
    outs = engine.generate(
        [ids[p.index] for p, _ in units],
        replace(draw.sampling, n=1),
        [sample_seed(draw.seed, p.index, s) for p, s in units],
    )
    drawn = []
    for (prompt, s), completions in zip(units, outs, strict=True):
        if len(completions) != 1:
            raise LieError(
                f"the engine returned {len(completions)} samples for one request of {prompt.where}, expected 1"
            )
        drawn.append(Drawn(prompt, s, len(ids[prompt.index]), completions[0]))
    return drawn


def sample_in_shards(
    prompts: Sequence[Prompt],
    draw: Draw,
    load_engine: Callable[[], Any],
    records: Callable[[list[Drawn]], list[dict[str, Any]]],
    work_dir: Path,
    manifest: dict[str, Any],
    shard_size: int,
    desc: str,
    progress: bool = True,
) -> Iterator[dict[str, Any]]:
    """Every sample of every prompt, turned into one record each (a JSON line), shard by shard
    (:func:`shard_assignment`); the records in the flat (prompt, sample) order, read from the shard files."""
    holder: list[Any] = []

    def work(shard: Sequence[int]) -> list[dict[str, Any]]:
        if not holder:
            holder.append(load_engine())
        return records(draw_shard(holder[0], prompts, draw, shard))

    assignment = shard_assignment(prompts, draw, shard_size)
    state = {**manifest, "shard_plan": f"{ASSIGNMENT_RULE}; sha256 {assignment_digest(assignment)}"}
    paths = run_assigned(assignment, work_dir, state, work, desc=desc, progress=progress, unit="sample")
    return iter_assigned(paths, assignment)
