"""The supervised stage of a tiny base model: teach the task's format, and a shallow habit.

The CPU study needs a policy that starts in the Shallow Exploration Trap: it can write the steps
of a solution, but it usually stops early and guesses. So the examples are multi-step arithmetic
problems (``lie.tasks.arithmetic``) answered by :func:`lie.tasks.arithmetic.sampled_solution`:
after each step the example stops with probability ``stop_prob`` and boxes the running value, so
the number of steps written decays geometrically and full solutions of deep problems are rare.

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
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from lie.errors import LieError

log = logging.getLogger(__name__)

SFT_KEYS = (
    "seed",  # draws the problems, the truncations and the batches
    "problems",  # distinct problems drawn (lie.tasks.arithmetic.generate)
    "min_depth",  # their depths, uniform in [min_depth, max_depth]
    "max_depth",
    "stop_prob",  # per-step probability of stopping and guessing (0: always full solutions)
    "steps",  # optimizer steps
    "batch_size",  # examples per step
    "lr",  # peak learning rate
    "warmup_steps",  # linear warm-up steps
)
LOG_EVERY = 50


@dataclass(frozen=True)
class SFTSettings:
    seed: int
    problems: int
    min_depth: int
    max_depth: int
    stop_prob: float
    steps: int
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
        values: dict[str, Any] = {}
        for key in SFT_KEYS:
            value = mapping[key]
            real = key in ("stop_prob", "lr")
            ok = isinstance(value, (int, float) if real else int) and not isinstance(value, bool)
            if not ok:
                raise LieError(f"{where}.{key} must be {'a number' if real else 'an integer'}, got {value!r}")
            values[key] = float(value) if real else value
        for key in ("problems", "min_depth", "steps", "batch_size"):
            if values[key] < 1:
                raise LieError(f"{where}.{key} must be >= 1, got {values[key]}")
        if values["max_depth"] < values["min_depth"]:
            raise LieError(f"{where}.max_depth must be >= min_depth, got {values['max_depth']}")
        if not 0.0 <= values["stop_prob"] <= 1.0:
            raise LieError(f"{where}.stop_prob must be in [0, 1], got {values['stop_prob']}")
        if values["lr"] <= 0:
            raise LieError(f"{where}.lr must be > 0, got {values['lr']}")
        if values["warmup_steps"] < 0:
            raise LieError(f"{where}.warmup_steps must be >= 0, got {values['warmup_steps']}")
        return cls(**values)


def sft_problems(settings: SFTSettings) -> list[Any]:
    from lie.tasks import arithmetic

    return arithmetic.generate(settings.problems, settings.seed, settings.min_depth, settings.max_depth)


def tokenizer_corpus(settings: SFTSettings, template: str) -> list[str]:
    """Texts for the tokenizer: the questions as prompted and their full solutions (compact steps)."""
    from lie.prompts import render_question

    problems = sft_problems(settings)
    return [render_question(template, p.question()) for p in problems] + [p.solution() for p in problems]


def _lr_factor(step: int, settings: SFTSettings) -> float:
    if step < settings.warmup_steps:
        return (step + 1) / settings.warmup_steps
    span = max(1, settings.steps - settings.warmup_steps)
    return 1.0 - 0.9 * (step - settings.warmup_steps) / span


def run_sft(model: Any, tokenizer: Any, settings: SFTSettings, template: str) -> dict[str, Any]:
    """Train ``model`` in place on shallow-habit examples; return what was done (for lie_source.json)."""
    import torch
    from tqdm import tqdm

    from lie.prompts import chat_messages, prompt_token_ids, render_question
    from lie.tasks.arithmetic import sampled_solution

    problems = sft_problems(settings)
    prompts = [
        prompt_token_ids(tokenizer, chat_messages(render_question(template, p.question()))) for p in problems
    ]
    rng = random.Random(settings.seed)
    torch.manual_seed(settings.seed)
    eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
    optimizer = torch.optim.AdamW(model.parameters(), lr=settings.lr, weight_decay=0.0)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: _lr_factor(s, settings))
    kept: Counter[int] = Counter()
    full = target_tokens = examples = 0
    losses: list[dict[str, float]] = []
    window: list[float] = []
    start = time.perf_counter()
    model.train()
    for step in tqdm(range(settings.steps), desc="sft steps", unit="step", mininterval=5.0):
        batch = []
        for _ in range(settings.batch_size):
            i = rng.randrange(len(problems))
            text, keep = sampled_solution(problems[i], rng, settings.stop_prob)
            target = tokenizer(text, add_special_tokens=False)["input_ids"] + [eos]
            batch.append((prompts[i], target))
            kept[keep] += 1
            full += keep == problems[i].depth
            target_tokens += len(target)
            examples += 1
        width = max(len(p) + len(t) for p, t in batch)
        ids = torch.full((len(batch), width), pad, dtype=torch.long)
        labels = torch.full((len(batch), width), -100, dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for row, (prompt, target) in enumerate(batch):
            seq = prompt + target
            ids[row, : len(seq)] = torch.tensor(seq)
            mask[row, : len(seq)] = 1
            labels[row, len(prompt) : len(seq)] = torch.tensor(target)
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
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
    log.info(
        "sft: %d steps in %.0f s, final loss %.3f, %.0f%% full solutions in the examples",
        settings.steps,
        seconds,
        losses[-1]["loss"],
        100 * full / examples,
    )
    return {
        "settings": asdict(settings),
        "template": template,
        "examples": examples,
        "full_solution_share": full / examples,
        "mean_target_tokens": target_tokens / examples,
        "steps_kept": {str(k): kept[k] for k in sorted(kept)},
        "loss": losses,
        "seconds": round(seconds, 1),
        "optimizer": "AdamW(weight_decay=0), grad clip 1.0, linear warm-up then linear decay to lr/10",
    }


def sft_record(path: Path) -> dict[str, Any] | None:
    """The ``sft`` record of a model folder's ``lie_source.json``, or None (no supervised stage)."""
    import json

    source = path / "lie_source.json"
    if not source.exists():
        return None
    return json.loads(source.read_text(encoding="utf-8")).get("sft")
