"""The one sampling loop, under ``lie generate`` (benchmarks) and ``lie reflen`` (reference lengths).

Prompts are chat messages with an index; every (prompt, sample) pair of the flat order is one
engine request with its own seed, ``sample_seed(seed, index, sample)``, so a shard draws the same
samples whichever shards ran before it. The work goes in resumable shards of samples
(``lie.formats.resumable``); the engine is loaded once, on the first shard that needs it, so that a
finished run that is only being collected never loads a model.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from lie.core.errors import LieError
from lie.engines.generation import Completion, SamplingSettings, sample_seed, token_budget
from lie.formats.prompts import prompt_token_ids
from lie.formats.resumable import run_in_shards


@dataclass(frozen=True)
class Prompt:
    """What to sample from: one problem's chat messages, ``where`` naming it in errors."""

    index: int
    messages: list[dict[str, str]]
    where: str


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


def draw_shard(engine: Any, prompts: Sequence[Prompt], draw: Draw, shard: range) -> list[Drawn]:
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
) -> list[Path]:
    """Every sample of every prompt, turned into records (JSON lines) shard by shard; the shard files."""
    holder: list[Any] = []

    def work(shard: range) -> list[dict[str, Any]]:
        if not holder:
            holder.append(load_engine())
        return records(draw_shard(holder[0], prompts, draw, shard))

    total = len(prompts) * draw.sampling.n
    return run_in_shards(
        total, shard_size, work_dir, manifest, work, desc=desc, progress=progress, unit="sample"
    )
