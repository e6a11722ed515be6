"""Which checkpoint of a verl run is evaluated (``training.eval_step``): ``final`` (the default), a
fixed step, ``best_val``, or, under ``evaluation.equal_steps``, a LIE run's checkpoint after its
baseline's epochs (:class:`lie.config.settings.EpochStep`).

What is known of the authors' choice: their trainer copies the model whenever its validation
average on their ``valid_ood_qwen3.parquet`` at 16,384 tokens beats the best so far (a file whose
content this project never read), and which checkpoint the paper reports is not published
(docs/evaluation.md). ``best_val`` is our analogue, not their selection: from the run's own
metrics, at every step that validated (``training.test_freq``) and saved a checkpoint that is still
there, the mean over validation sets of verl's ``val-core/<set>/acc/mean@<n>``; the highest wins,
the earliest of equals (a new best must beat the old one). It is a selection on the test sets
whenever ``training.val_sets`` are the evaluation benchmarks, and the report's footnote says so.

An :class:`EpochStep` is the step ``epochs / of`` of the way through the run: the run's last
checkpoint is its last step (verl's total, its epochs times the steps of one epoch), so the
baseline's step count is that step times ``epochs / of`` (same data and batch size).
"""

from __future__ import annotations

import logging
from typing import Any

from lie.config.settings import BEST_VAL, EpochStep
from lie.core.errors import LieError
from lie.engines.verl import checkpoints as verl_checkpoints
from lie.formats.runs import RunDir, read_metrics, validation_average

log = logging.getLogger(__name__)


def best_val_step(rundir: RunDir) -> int:
    """The kept checkpoint's step with the best validation average (see the module docstring)."""
    kept = {
        step
        for step, path in verl_checkpoints.steps(rundir.checkpoints).items()
        if verl_checkpoints.is_complete(path)
    }
    scored = []
    for metrics in read_metrics(rundir):
        average = validation_average(metrics)
        if average is not None:
            scored.append((int(metrics["step"]), average))
    candidates = [(step, avg) for step, avg in scored if step in kept]
    if not candidates:
        raise LieError(
            f"run {rundir.run}: training.eval_step best_val needs a kept checkpoint at a step that validated; "
            f"validated steps {[s for s, _ in scored] or 'none'} (training.test_freq, val_sets), checkpoints "
            f"{sorted(kept) or 'none'} (training.save_freq): make test_freq a multiple of save_freq, or set "
            "training.eval_step to final or a step"
        )
    best_step, best = candidates[0]
    for step, avg in candidates[1:]:
        if avg > best:
            best_step, best = step, avg
    log.info("%s: best validation average %.4f at step %d (of %d validated checkpoints)",
             rundir.run, best, best_step, len(candidates))  # fmt: skip
    return best_step


def epoch_step(rundir: RunDir, at: EpochStep) -> int:
    """The step of ``rundir`` after ``at.epochs`` of its ``at.of`` epochs, with its checkpoint kept."""
    kept = {
        step
        for step, path in verl_checkpoints.steps(rundir.checkpoints).items()
        if verl_checkpoints.is_complete(path)
    }
    if not kept:
        raise LieError(
            f"run {rundir.run}: evaluation.equal_steps needs its checkpoints; none is in {rundir.checkpoints}"
        )
    last = max(kept)
    if last % at.of:
        raise LieError(
            f"run {rundir.run}: its last checkpoint, step {last}, is not the end of {at.of} whole epochs, so the "
            f"step after {at.epochs} is unknown (evaluation.equal_steps): finish the run (`lie train {rundir.run}`)"
        )
    step = last // at.of * at.epochs
    if step not in kept:
        raise LieError(
            f"run {rundir.run}: evaluation.equal_steps evaluates it at step {step} (after {at.epochs} of {at.of} "
            f"epochs), which has no kept checkpoint (kept: {sorted(kept)}): it was never saved (training.save_freq "
            f"must divide {step}) or was pruned while the run trained with the switch off (training."
            "keep_checkpoints); set evaluation.equal_steps to false, or move the run folder aside and train it "
            "again with the switch on (it then keeps every checkpoint)"
        )
    log.info(
        "%s: step %d, after %d of its %d epochs (evaluation.equal_steps)", rundir.run, step, at.epochs, at.of
    )
    return step


def evaluated_step(rundir: RunDir, eval_step: Any) -> Any:
    """``training.eval_step`` resolved to what the checkpoint lookup takes: ``final`` or a step."""
    if isinstance(eval_step, EpochStep):
        return epoch_step(rundir, eval_step)
    return best_val_step(rundir) if eval_step == BEST_VAL else eval_step
