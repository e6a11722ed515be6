"""Which checkpoint of a verl run is evaluated (``training.eval_step``): ``final`` (the default), a
fixed step, or ``best_val``, the authors' choice.

The authors' trainer keeps the checkpoint with the best in-training validation average, on a file
that holds the test benchmarks; ``best_val`` reproduces that from the run's own metrics: at every
step that validated (``training.test_freq``) and saved a checkpoint that is still there, the mean
over validation sets of verl's ``val-core/<set>/acc/mean@<n>``; the highest wins, the earliest of
equals (a new best must beat the old one). It is a selection on the test sets whenever
``training.val_sets`` are the evaluation benchmarks, and the report's footnote says so.
"""

from __future__ import annotations

import logging
from typing import Any

from lie.config.settings import BEST_VAL
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


def evaluated_step(rundir: RunDir, eval_step: Any) -> Any:
    """``training.eval_step`` resolved to what the checkpoint lookup takes: ``final`` or a step."""
    return best_val_step(rundir) if eval_step == BEST_VAL else eval_step
