"""verl's synchronous PPO trainer with the policy entropy logged as a token mean in every run.

verl 0.9.1 logs ``actor/entropy`` in ``PPOTrainer._compute_old_log_prob``
(verl/trainer/ppo/v1/trainer_base.py, ``entropy_agg = agg_loss(loss_mat=entropy, ...,
loss_agg_mode=actor_config.loss_agg_mode)``) with the run's own loss aggregation: GRPO's
``token-mean`` gives the mean over every response token of the step, GSPO's ``seq-mean-token-mean``
the mean of per-response means, where a short response's tokens weigh more. The authors' logs are a
token mean for both, and the report compares entropy across algorithms and with the paper, so
:class:`LIETrainer` replaces the value with the token mean of the same per-token entropies, read
back from verl's TransferQueue where verl has just stored them.

verl takes its trainer from a registry (``TRAINER_REGISTRY`` in trainer_base.py) by
``trainer.v1.trainer_mode``; the mode's name also selects verl's behaviour (``self.trainer_mode ==
"sync"`` picks the replay buffer and skips the asynchronous paths), so :class:`LIETrainer` takes
the place of ``sync`` rather than a name of its own. This module is a ``verl.plugins`` entry point
(pyproject.toml): ``import verl`` loads it in every verl process, on GPUs and on the CPU backend
alike; ``lie.engines.verl.overrides.check_composed`` stops a launch where it is not installed.
"""

from __future__ import annotations

from typing import Any

import transfer_queue as tq
from verl.trainer.ppo.v1 import PPOTrainerSync
from verl.trainer.ppo.v1.trainer_base import TRAINER_REGISTRY
from verl.utils.torch_functional import masked_mean

TRAINER_MODE = "sync"  # lie_trainer.yaml's trainer.v1.trainer_mode (verl's default)
ENTROPY = "actor/entropy"


class LIETrainer(PPOTrainerSync):
    """verl's synchronous trainer, with ``actor/entropy`` a token mean whatever ``loss_agg_mode`` is."""

    def _compute_old_log_prob(self, batch: Any, metrics: dict) -> Any:
        batch = super()._compute_old_log_prob(batch, metrics)
        if ENTROPY in metrics:  # verl's bypass mode recomputes no log-probs and logs no entropy
            fields = ["entropy", "response_mask"]
            data = tq.kv_batch_get(keys=batch.keys, partition_id=batch.partition_id, select_fields=fields)
            data = data.to_padded_tensor()
            entropy = data["entropy"].double()  # bf16 on the GPU: a sum over the step's tokens needs more
            metrics[ENTROPY] = float(masked_mean(entropy, data["response_mask"].bool()))
        return batch


TRAINER_REGISTRY[TRAINER_MODE] = LIETrainer
