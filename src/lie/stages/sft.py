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
With ``replay`` > 0 that share of each shallow-phase batch is full solutions trained conditional on
going on at every step start (``lie.stages.sft_replay``), so that the later steps are rehearsed while
the stop habit is learnt from the shallow examples alone.

Plain torch on the CPU: AdamW (no weight decay), ``warmup_steps`` of linear warm-up, then a linear
decay to a tenth of ``lr``; the loss is on the response tokens only (end-of-turn token included),
the prompt is the pipeline's own (``prompt.math`` through the chat template), so training,
generation and the supervised stage see the same text. Configured under ``models.<name>.sft``
(:data:`SFT_KEYS`); what it did is recorded in the model's ``lie_source.json``, with the threads and
kernels it ran under (one thread; the kernels are the caller's: a study pins them, ``lie.study.numerics``).
"""

from __future__ import annotations

import logging
import random
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import lie.formats.prompts
import lie.stages.tiny
import lie.tasks
import lie.tasks.shallow  # called through the module: a test swaps its example maker
from lie.config.supervised import SFTSettings
from lie.core.errors import LieError
from lie.formats.jsonl import atomic_output
from lie.formats.prompts import chat_messages, prompt_token_ids, render_question
from lie.stages.sft_replay import masked_loss, replay_examples
from lie.tasks import task_module

log = logging.getLogger(__name__)

LOG_EVERY = 50


def sft_problems(settings: SFTSettings) -> list[Any]:
    task = task_module(settings.task)
    try:
        return task.generate(settings.problems, settings.seed, settings.min_depth, settings.max_depth)
    except ValueError as exc:
        raise LieError(f"supervised stage ({settings.task}): {exc}") from None


def tokenizer_corpus(settings: SFTSettings, template: str) -> list[str]:
    """Texts for the tokenizer: the questions as prompted and their full solutions (compact steps)."""
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


# What the full-solution phase does not read: the shallow phase's own settings.
SHALLOW_ONLY = ("stop_prob", "pad_prob", "pad_repeats", "replay")
STATE_FORMAT = 1


def code_files(task: str) -> list[Path]:
    """The source files whose code decides the full-solution phase's end state: this supervised loop,
    the task's problem generator (and the task package that picks it), the prompt's rendering and the
    tiny model's architecture. A change to any of them (a different loss, another problem order) must
    not restore a state an older one computed."""
    modules = (sys.modules[__name__], task_module(task), lie.tasks, lie.formats.prompts, lie.stages.tiny)
    return [Path(str(m.__file__)) for m in modules]


CHECKPOINT_EVERY = 250  # full-solution steps between saved states of a phase under way (sft_cache)
THREADS = 1  # the stage's torch threads, whatever the machine's cores: a reduction split otherwise parts


def kernel_setting() -> dict[str, str | None]:
    """What picks this process's floating-point kernels (lie.study.numerics): torch's CPU capability and the
    MKL and oneDNN settings of the environment. Recorded with the model and part of the saved state's key."""
    import os

    import torch

    return {
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "MKL_CBWR": os.environ.get("MKL_CBWR"),
        "ONEDNN_MAX_CPU_ISA": os.environ.get("ONEDNN_MAX_CPU_ISA"),
    }


def full_phase_key(model: Any, tokenizer: Any, settings: SFTSettings, template: str) -> str:
    """A digest of everything the full-solution phase's end state depends on: the settings but the
    shallow phase's, the prompt template, the tokenizer's vocabulary, the initial weights, the code that
    computes it (:func:`code_files`, by content), the versions of torch and transformers (their
    kernels' numbers, the model's forward) and the kernels' setting (:func:`kernel_setting`)."""
    import hashlib
    import json

    import torch
    import transformers

    digest = hashlib.sha256()
    fields = {k: v for k, v in asdict(settings).items() if k not in SHALLOW_ONLY}
    code = {path.name: hashlib.sha256(path.read_bytes()).hexdigest() for path in code_files(settings.task)}
    head = {"format": STATE_FORMAT, "settings": fields, "template": template, "torch": torch.__version__,
            "transformers": transformers.__version__, "code": code, "kernels": kernel_setting()}  # fmt: skip
    digest.update(json.dumps(head, sort_keys=True).encode())
    digest.update(json.dumps(sorted(tokenizer.get_vocab().items())).encode())
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()[:24]


@dataclass
class _Trainer:
    """The supervised stage's loop, its state saved and restored whole (weights, optimizer, schedule,
    the example draw's random state, torch's), so that a run continued from a saved state takes the
    same steps as one that never stopped."""

    model: Any
    tokenizer: Any
    settings: SFTSettings
    task: Any
    problems: list[Any]
    prompts: list[list[int]]
    rng: random.Random
    optimizer: Any
    scheduler: Any
    counts: ExampleCounts = field(default_factory=ExampleCounts)
    losses: list[dict[str, float]] = field(default_factory=list)
    window: list[float] = field(default_factory=list)
    replay: tuple[list[Any], list[int]] | None = None  # replay examples and stop tokens, made at first use
    replayed: int = 0

    def train(self, steps: range, checkpoint: Callable[[int], None] | None = None) -> None:
        """Take ``steps``; ``checkpoint(n)`` after every :data:`CHECKPOINT_EVERY` steps but the last."""
        import torch
        from tqdm import tqdm

        s = self.settings
        self.model.train()
        for step in tqdm(steps, "sft steps", steps.stop, unit="step", mininterval=5.0, initial=steps.start):
            if checkpoint is not None and step > steps.start and step % CHECKPOINT_EVERY == 0:
                checkpoint(step)
            shallow = step >= s.full_steps
            stop, pad_prob = (s.stop_prob, s.pad_prob) if shallow else (0.0, 0.0)
            replayed = round(s.batch_size * s.replay) if shallow else 0
            batch = []
            for _ in range(s.batch_size - replayed):
                i = self.rng.randrange(len(self.problems))
                example = lie.tasks.shallow.shallow_example(
                    self.task, self.problems[i], self.rng, stop, pad_prob, s.pad_repeats
                )
                ids = self.tokenizer(example.text, add_special_tokens=False)["input_ids"]
                target = ids + [self.tokenizer.eos_token_id]
                batch.append((self.prompts[i], target))
                if shallow:
                    self.counts.add(example.keep, self.problems[i].depth, example.repeats, len(target))
            if replayed:
                loss = self._replay_loss(batch, replayed)
            else:
                loss = self.model(**collate(batch, self.tokenizer.pad_token_id)).loss
            self.optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
            self.optimizer.step()
            self.scheduler.step()
            self.window.append(float(loss.item()))
            if (step + 1) % LOG_EVERY == 0 or step + 1 == s.steps:
                self.losses.append({"step": step + 1, "loss": sum(self.window) / len(self.window)})
                self.window = []
        self.model.eval()

    def _replay_loss(self, batch: list[tuple[list[int], list[int]]], replayed: int) -> Any:
        """The batch's loss with ``replayed`` decision-masked full solutions added (lie.stages.sft_replay)."""
        import torch

        if self.replay is None:
            self.replay = replay_examples(self.tokenizer, self.task, self.problems)
        examples, stop_ids = self.replay
        starts = []
        for _ in range(replayed):
            i = self.rng.randrange(len(self.problems))
            starts.append((len(batch), len(self.prompts[i]), examples[i].decisions))
            batch.append((self.prompts[i], examples[i].target))
            self.replayed += 1
        inputs = collate(batch, self.tokenizer.pad_token_id)
        decisions = torch.zeros_like(inputs["labels"], dtype=torch.bool)
        for row, offset, chosen in starts:
            decisions[row, [offset + d for d in chosen]] = True
        labels = inputs.pop("labels")
        logits = self.model(**inputs).logits
        return masked_loss(logits, labels, decisions, stop_ids)

    def state(self) -> dict[str, Any]:
        import torch

        return {
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "rng": self.rng.getstate(),
            "torch_rng": torch.get_rng_state(),
            "losses": self.losses,
            "window": self.window,
        }

    def restore(self, state: dict[str, Any]) -> None:
        import torch

        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.rng.setstate(state["rng"])
        torch.set_rng_state(state["torch_rng"])
        self.losses, self.window = list(state["losses"]), list(state["window"])


def _load_state(path: Path, what: str) -> dict[str, Any]:
    import torch

    try:
        return torch.load(path, weights_only=True)
    except Exception as exc:  # noqa: BLE001 - torch raises many kinds for a damaged file
        raise LieError(f"{path}: cannot read the saved {what} ({exc}); delete it and rerun") from None


def _full_phase(trainer: _Trainer, cache: Path, key: str) -> bool:
    """Run the full-solution phase, or restore its end state from ``cache/<key>.pt`` where another model
    (or an earlier run) saved it; save it there when computed. Returns whether it was restored. While it
    runs, its state every :data:`CHECKPOINT_EVERY` steps is ``cache/<key>.partial.pt``: a run killed
    part-way resumes there (bit for bit the run that never stopped)."""
    import fcntl

    import torch

    cache.mkdir(parents=True, exist_ok=True)
    path, partial = cache / f"{key}.pt", cache / f"{key}.partial.pt"
    with open(cache / f"{key}.lock", "a") as lock:  # one process computes it; the others wait, then read it
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.is_file():
            trainer.restore(_load_state(path, "full-solution state"))
            log.info("sft: full-solution phase restored from %s", path)
            return True
        start = 0
        if partial.is_file():
            state = _load_state(partial, "part of the full-solution phase")
            trainer.restore(state)
            start = int(state["step"])
            log.info("sft: full-solution phase resumed at step %d from %s", start, partial)

        def checkpoint(step: int) -> None:
            with atomic_output(partial, "wb") as handle:
                torch.save({**trainer.state(), "step": step}, handle)

        trainer.train(range(start, trainer.settings.full_steps), checkpoint)
        with atomic_output(path, "wb") as handle:
            torch.save(trainer.state(), handle)
        partial.unlink(missing_ok=True)
        log.info("sft: full-solution phase saved to %s", path)
        return False


def run_sft(
    model: Any, tokenizer: Any, settings: SFTSettings, template: str, cache: str | Path | None = None
) -> dict[str, Any]:
    """Train ``model`` in place: full solutions, then shallow-habit examples; return what was done.

    ``cache``: a folder for the full-solution phase's end state (config ``sft_cache``): restored from
    there when a model with the same :func:`full_phase_key` saved it, else computed and saved. Runs
    :data:`THREADS` torch threads (the caller's number is restored after).
    """
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(THREADS)
    try:
        return _run_sft(model, tokenizer, settings, template, cache)
    finally:
        torch.set_num_threads(threads)


def _run_sft(
    model: Any, tokenizer: Any, settings: SFTSettings, template: str, cache: str | Path | None
) -> dict[str, Any]:
    import torch

    problems = sft_problems(settings)
    prompts = [
        prompt_token_ids(tokenizer, chat_messages(render_question(template, p.question()))) for p in problems
    ]
    key = full_phase_key(model, tokenizer, settings, template) if cache is not None else None
    torch.manual_seed(settings.seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=settings.lr, weight_decay=0.0)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: _lr_factor(s, settings))
    trainer = _Trainer(
        model, tokenizer, settings, task_module(settings.task), problems, prompts, random.Random(settings.seed),
        optimizer, scheduler,
    )  # fmt: skip
    start = time.perf_counter()
    restored = False
    if key is not None and settings.full_steps > 0:
        restored = _full_phase(trainer, Path(cache), key)  # type: ignore[arg-type]
        trainer.train(range(settings.full_steps, settings.steps))
    else:
        trainer.train(range(settings.steps))
    seconds = time.perf_counter() - start
    record = trainer.counts.record()
    log.info(
        "sft: %d steps in %.0f s, final loss %.3f; shallow phase: %.0f%% full solutions, %.0f%% padded",
        settings.steps,
        seconds,
        trainer.losses[-1]["loss"],
        100 * record["full_solution_share"],
        100 * record["padded_share"],
    )
    out = {
        "settings": asdict(settings),
        "template": template,
        "shallow_phase": record,
        "loss": trainer.losses,
        "seconds": round(seconds, 1),
        "optimizer": "AdamW(weight_decay=0), grad clip 1.0, linear warm-up then linear decay to lr/10",
        "numerics": {"torch_threads": torch.get_num_threads(), **kernel_setting()},
    }
    if key is not None:
        out["full_phase"] = {"key": key, "restored": restored}
    if trainer.replay is not None:
        out["replay"] = {
            "share": settings.replay,
            "examples": trainer.replayed,
            "stop_tokens": [tokenizer.decode([t]) for t in trainer.replay[1]],
            "loss": "decision-masked: the stop tokens' logits left out at a full solution's step starts",
        }
    return out
