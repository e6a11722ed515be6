"""Test instrumentation loaded into verl's processes by ``VERL_USE_EXTERNAL_MODULES=verl_probe``.

It records what verl 0.9.1 aggregates into ``actor/entropy`` (trainer/ppo/v1/trainer_base.py,
``_compute_old_log_prob``: the only ``agg_loss`` call of that module): the per-token entropies of
each response of the step and the aggregation mode, one JSON line per call to the file named by
``LIE_TEST_ENTROPY_DUMP``. Nothing else changes: the original function computes the result.
"""

from __future__ import annotations

import importlib
import json
import os

# verl's cpu platform first: importing trainer_base makes verl pick its device
importlib.import_module("lie.engines.verl.cpu.plugin")
trainer_base = importlib.import_module("verl.trainer.ppo.v1.trainer_base")

_original = trainer_base.agg_loss


def _recording_agg_loss(loss_mat, loss_mask, loss_agg_mode, **kwargs):
    path = os.environ.get("LIE_TEST_ENTROPY_DUMP")
    if path:
        rows = [row[mask.bool()].tolist() for row, mask in zip(loss_mat, loss_mask)]
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps({"mode": loss_agg_mode, "rows": rows}) + "\n")
    return _original(loss_mat=loss_mat, loss_mask=loss_mask, loss_agg_mode=loss_agg_mode, **kwargs)


trainer_base.agg_loss = _recording_agg_loss
