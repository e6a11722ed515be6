"""The supervised stage of a tiny base model: teach the task's format, and a shallow habit.

The CPU study needs a policy that starts in the Shallow Exploration Trap: it can write every step
of a solution, but it usually stops early and answers. So the stage has two phases on problems of
a synthetic task (``task``: ``lie.tasks.chain`` for the study). The first ``full_steps`` optimizer
steps teach the task on full solutions; the rest teach the habit, with examples of
:func:`lie.tasks.shallow.shallow_example`: after each step the example stops with probability
``stop_prob`` and boxes the value reached, so the number of steps written decays geometrically and
full solutions of deep problems are rare; a share ``pad_prob`` of the examples that wrote a step
repeat it ``pad_repeats`` more times first (the padding channel the redundancy penalty acts on).
Without the first phase the later steps of deep problems would be seen too rarely to be learnt.

Plain torch on the CPU: AdamW (no weight decay), ``warmup_steps`` of linear warm-up, then a linear
decay to a tenth of ``lr``; the loss is on the response tokens only (end-of-turn token included),
the prompt is the pipeline's own (``prompt.math`` through the chat template), so training,
generation and the supervised stage see the same text. Configured under ``models.<name>.sft``
(:data:`SFT_KEYS`); what it did is recorded in the model's ``lie_source.json``.
"""

from __future__ import annotations

import logging
import random
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from lie.core.errors import LieError
from lie.tasks import TASKS

log = logging.getLogger(__name__)

SFT_KEYS = (
    "task",  # a synthetic task of lie.tasks (TASKS)
    "seed",  # draws the problems, the truncations and the batches
    "problems",  # distinct problems drawn (the task's generate)
    "min_depth",  # their depths, uniform in [min_depth, max_depth]
    "max_depth",
    "stop_prob",  # per-step probability of stopping and guessing (0: always full solutions)
    "pad_prob",  # share of the examples with a step written that repeat their last step
    "pad_repeats",  # extra copies of that step
    "steps",  # optimizer steps in all
    "full_steps",  # the first of them on full solutions (the task), the rest on shallow examples
    "batch_size",  # examples per step
    "lr",  # peak learning rate
    "warmup_steps",  # linear warm-up steps
)
LOG_EVERY = 50


@dataclass(frozen=True)
class SFTSettings:
    task: str
    seed: int
    problems: int
    min_depth: int
    max_depth: int
    stop_prob: float
    pad_prob: float
    pad_repeats: int
    steps: int
    full_steps: int
    batch_size: int
    lr: float
    warmup_steps: int

    @classmethod
    def from_mapping(cls, mapping: Any, where: str) -> SFTSettings:
        """Check ``mapping`` (``models.<name>.sft``): every key present, of the right type and range."""
        if not isinstance(mapping, dict):
            raise LieError(f"{where} must be a mapping with keys {', '.join(SFT_KEYS)}")
        unknown = sorted(set(mapping) - set(SFT_KEYS))
        missing = [k for k in SFT_KEYS if k not in mapping]
        if unknown or missing:
            raise LieError(
                f"{where}: unknown key(s) {unknown}, missing key(s) {missing}; valid: {', '.join(SFT_KEYS)}"
            )
        if mapping["task"] not in TASKS:
            raise LieError(f"{where}.task must be one of {', '.join(TASKS)}, got {mapping['task']!r}")
        values: dict[str, Any] = {"task": mapping["task"]}
        for key in SFT_KEYS[1:]:
            value = mapping[key]
            real = key in ("stop_prob", "pad_prob", "lr")
            ok = isinstance(value, (int, float) if real else int) and not isinstance(value, bool)
            if not ok:
                raise LieError(f"{where}.{key} must be {'a number' if real else 'an integer'}, got {value!r}")
            values[key] = float(value) if real else value
        for key in ("problems", "min_depth", "steps", "batch_size"):
            if values[key] < 1:
                raise LieError(f"{where}.{key} must be >= 1, got {values[key]}")
        if values["max_depth"] < values["min_depth"]:
            raise LieError(f"{where}.max_depth must be >= min_depth, got {values['max_depth']}")
        for key in ("stop_prob", "pad_prob"):
            if not 0.0 <= values[key] <= 1.0:
                raise LieError(f"{where}.{key} must be in [0, 1], got {values[key]}")
        if values["pad_repeats"] < 0:
            raise LieError(f"{where}.pad_repeats must be >= 0, got {values['pad_repeats']}")
        if values["lr"] <= 0:
            raise LieError(f"{where}.lr must be > 0, got {values['lr']}")
        if not 0 <= values["full_steps"] < values["steps"]:
            raise LieError(f"{where}.full_steps must be in 0..steps-1, got {values['full_steps']}")
        if values["warmup_steps"] < 0:
            raise LieError(f"{where}.warmup_steps must be >= 0, got {values['warmup_steps']}")
        return cls(**values)


def sft_problems(settings: SFTSettings) -> list[Any]:
    from lie.tasks import task_module

    task = task_module(settings.task)
    try:
        return task.generate(settings.problems, settings.seed, settings.min_depth, settings.max_depth)
    except ValueError as exc:
        raise LieError(f"supervised stage ({settings.task}): {exc}") from None


def tokenizer_corpus(settings: SFTSettings, template: str) -> list[str]:
    """Texts for the tokenizer: the questions as prompted and their full solutions (compact steps)."""
    from lie.formats.prompts import render_question

    problems = sft_problems(settings)
    return [render_question(template, p.question()) for p in problems] + [p.solution() for p in problems]


def _lr_factor(step: int, settings: SFTSettings) -> float:
    if step < settings.warmup_steps:
        return (step + 1) / settings.warmup_steps
    span = max(1, settings.steps - settings.warmup_steps)
    return 1.0 - 0.9 * (step - settings.warmup_steps) / span


@dataclass
class ExampleCounts:
    """What the shallow phase's examples held (the full-solution phase writes full solutions only)."""

    examples: int = 0
    full: int = 0
    padded: int = 0
    target_tokens: int = 0
    kept: Counter[int] = field(default_factory=Counter)

    def add(self, keep: int, depth: int, repeats: int, tokens: int) -> None:
        self.examples += 1
        self.full += keep == depth
        self.padded += repeats > 0
        self.target_tokens += tokens
        self.kept[keep] += 1

    def record(self) -> dict[str, Any]:
        n = max(self.examples, 1)
        return {
            "examples": self.examples,
            "full_solution_share": self.full / n,
            "padded_share": self.padded / n,
            "mean_target_tokens": self.target_tokens / n,
            "steps_kept": {str(k): self.kept[k] for k in sorted(self.kept)},
        }


def collate(batch: list[tuple[list[int], list[int]]], pad: int) -> dict[str, Any]:
    """Right-padded ids, attention mask and labels (the response tokens only) of (prompt, target) pairs."""
    import torch

    width = max(len(p) + len(t) for p, t in batch)
    ids = torch.full((len(batch), width), pad, dtype=torch.long)
    labels = torch.full((len(batch), width), -100, dtype=torch.long)
    mask = torch.zeros((len(batch), width), dtype=torch.long)
    for row, (prompt, target) in enumerate(batch):
        seq = prompt + target
        ids[row, : len(seq)] = torch.tensor(seq)
        mask[row, : len(seq)] = 1
        labels[row, len(prompt) : len(seq)] = torch.tensor(target)
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}


def run_sft(model: Any, tokenizer: Any, settings: SFTSettings, template: str) -> dict[str, Any]:
    """Train ``model`` in place: full solutions, then shallow-habit examples; return what was done."""
    import torch
    from tqdm import tqdm

    from lie.formats.prompts import chat_messages, prompt_token_ids, render_question
    from lie.tasks import task_module
    from lie.tasks.shallow import shallow_example

    task = task_module(settings.task)
    problems = sft_problems(settings)
    prompts = [
        prompt_token_ids(tokenizer, chat_messages(render_question(template, p.question()))) for p in problems
    ]
    rng = random.Random(settings.seed)
    torch.manual_seed(settings.seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=settings.lr, weight_decay=0.0)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: _lr_factor(s, settings))
    counts = ExampleCounts()
    losses: list[dict[str, float]] = []
    window: list[float] = []
    start = time.perf_counter()
    model.train()
    for step in tqdm(range(settings.steps), desc="sft steps", unit="step", mininterval=5.0):
        shallow = step >= settings.full_steps
        stop, pad_prob = (settings.stop_prob, settings.pad_prob) if shallow else (0.0, 0.0)
        batch = []
        for _ in range(settings.batch_size):
            i = rng.randrange(len(problems))
            example = shallow_example(task, problems[i], rng, stop, pad_prob, settings.pad_repeats)
            target = tokenizer(example.text, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
            batch.append((prompts[i], target))
            if shallow:
                counts.add(example.keep, problems[i].depth, example.repeats, len(target))
        loss = model(**collate(batch, tokenizer.pad_token_id)).loss
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        window.append(float(loss.item()))
        if (step + 1) % LOG_EVERY == 0 or step + 1 == settings.steps:
            losses.append({"step": step + 1, "loss": sum(window) / len(window)})
            window = []
    model.eval()
    seconds = time.perf_counter() - start
    record = counts.record()
    log.info(
        "sft: %d steps in %.0f s, final loss %.3f; shallow phase: %.0f%% full solutions, %.0f%% padded",
        settings.steps,
        seconds,
        losses[-1]["loss"],
        100 * record["full_solution_share"],
        100 * record["padded_share"],
    )
    return {
        "settings": asdict(settings),
        "template": template,
        "shallow_phase": record,
        "loss": losses,
        "seconds": round(seconds, 1),
        "optimizer": "AdamW(weight_decay=0), grad clip 1.0, linear warm-up then linear decay to lr/10",
    }
