"""verl's synchronous PPO trainer, reproducible, with the policy entropy logged as a token mean.

verl 0.9.1 logs ``actor/entropy`` in ``PPOTrainer._compute_old_log_prob``
(verl/trainer/ppo/v1/trainer_base.py, ``entropy_agg = agg_loss(loss_mat=entropy, ...,
loss_agg_mode=actor_config.loss_agg_mode)``) with the run's own loss aggregation: GRPO's
``token-mean`` gives the mean over every response token of the step, GSPO's ``seq-mean-token-mean``
the mean of per-response means, where a short response's tokens weigh more. The authors' logs are a
token mean for both, and the report compares entropy across algorithms and with the paper, so
:class:`LIETrainer` replaces the value with the token mean of the same per-token entropies, read
back from verl's TransferQueue where verl has just stored them.

Reproducible: verl names each prompt of a step by a random ``uuid4`` and trains on a step's samples
in the order they finished, so two runs of one config differed in their last digits even with
every sample seeded (``lie.engines.verl.cpu``). :class:`LIETrainer` names the prompts by step and
position (``s000003c0r0005``: step 3, first fetch of the step, row 5), puts the step's samples in
the order of those names and their session (sample) numbers before verl balances them, and writes
the step's rollout file in that order too (``lie.formats.runs.sort_rollouts``). verl's
``_validate`` names each validation prompt by ``uuid.uuid4()`` too and writes
``validation/<step>.jsonl`` sorted by those names; for its duration the trainer gives that call names
by step and row (``v000004r0011``), so the file holds the same samples in the same order each run
(the validation set's up to 9,999 rows: verl sorts the names as text).

verl takes its trainer from a registry (``TRAINER_REGISTRY`` in trainer_base.py) by
``trainer.v1.trainer_mode``; the mode's name also selects verl's behaviour (``self.trainer_mode ==
"sync"`` picks the replay buffer and skips the asynchronous paths), so :class:`LIETrainer` takes
the place of ``sync`` rather than a name of its own.

A save ahead of the job's end: verl 0.9.1's v1 trainer saves only on ``save_freq`` and at the last
step (trainer_base.py ``fit``); only its legacy trainer (ray_trainer.py) asks
``should_save_ckpt_esi`` whether the capacity block, the Slurm job here (``ray_on_slurm.sh`` exports
its end as ``MLP_CURRENT_CAPACITY_BLOCK_EXPIRATION_TIMESTAMP``), ends before another step and a save
could. :class:`LIETrainer` asks it after every step that verl did not save, with the longest step so
far and ``trainer.esi_redundant_time``, and saves then, as the legacy trainer does: a job killed at its
walltime loses at most the step it was in.

On the CPU backend (``trainer.device: cpu``) the trainer polls verl's replay buffer every
:data:`CPU_POLL_S` instead of verl's 2 s: a tiny model's rollout takes a fraction of a second, and each
step waited out the rest of the 2 s poll (half a smoke step). On GPUs, where a rollout takes minutes,
verl's interval stays. This module is a ``verl.plugins`` entry point
(pyproject.toml): ``import verl`` loads it in every verl process, on GPUs and on the CPU backend
alike; ``lie.engines.verl.overrides.check_composed`` stops a launch where it is not installed.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import transfer_queue as tq
from verl.trainer.ppo.v1 import PPOTrainerSync, trainer_base
from verl.trainer.ppo.v1.trainer_base import TRAINER_REGISTRY
from verl.utils import tensordict_utils as tu
from verl.utils.checkpoint.checkpoint_manager import should_save_ckpt_esi
from verl.utils.debug import marked_timer
from verl.utils.torch_functional import masked_mean

from lie.formats.runs import natural_key, sort_rollouts

log = logging.getLogger(__name__)

TRAINER_MODE = "sync"  # lie_trainer.yaml's trainer.v1.trainer_mode (verl's default)
ENTROPY = "actor/entropy"
CPU_POLL_S = 0.1  # the replay buffer's poll on the CPU backend (verl's ReplayBuffer default: 2.0)


def prompt_uid(step: int, fetch: int, row: int) -> str:
    """A prompt's name in verl's TransferQueue, without ``_``: verl splits its sample keys,
    ``{uid}_{session}_{i}``, at the first one."""
    return f"s{step:06d}c{fetch}r{row:04d}"


def val_prompt_uid(step: int, row: int) -> str:
    """A validation prompt's name: the step it validates and its row in the validation set."""
    return f"v{step:06d}r{row:04d}"


class ValidationNames:
    """Stands in for the ``uuid`` module of verl's ``trainer_base`` during ``_validate``, whose one
    use of it, ``str(uuid.uuid4())`` for each validation prompt in the loader's order, then gives
    :func:`val_prompt_uid` names."""

    def __init__(self, step: int) -> None:
        self.step, self.rows = step, 0

    def uuid4(self) -> str:
        self.rows += 1
        return val_prompt_uid(self.step, self.rows - 1)


class LIETrainer(PPOTrainerSync):
    """verl's synchronous trainer, reproducible, with ``actor/entropy`` a token mean whatever
    ``loss_agg_mode`` is."""

    _fetches: tuple[int, int] = (-1, 0)  # (step, batches fetched in it)
    _step_started: float = 0.0
    _longest_step_s: float = 0.0
    _validation_started: float = 0.0
    _longest_validation_s: float = 0.0  # verl validates after on_step_end, before it logs the step

    def on_step_begin(self) -> None:
        super().on_step_begin()
        self._step_started = time.monotonic()

    def on_step_end(self) -> None:
        self._longest_step_s = max(self._longest_step_s, time.monotonic() - self._step_started)
        if self._saves_ahead_of_the_end():
            log.warning("saving step %d ahead of the job's end (no room for another step)", self.global_steps)
            with marked_timer("save_checkpoint", self.timing_raw):  # logged as verl's own saves are
                self._save_checkpoint()
        super().on_step_end()

    def on_validate_begin(self) -> None:
        super().on_validate_begin()
        self._validation_started = time.monotonic()

    def on_validate_end(self) -> None:
        super().on_validate_end()
        self._longest_validation_s = max(
            self._longest_validation_s, time.monotonic() - self._validation_started
        )

    def _saves_ahead_of_the_end(self) -> bool:
        """True when verl did not save this step and the job's end leaves no room for another step,
        a validation and a save (verl's ``should_save_ckpt_esi``, the legacy trainer's rule, with the
        longest validation added to the longest step: verl validates after this hook and logs the step
        after that, and a checkpoint whose step was never logged is set aside on resume)."""
        trainer = self.config.trainer
        if trainer.save_freq <= 0:
            return False
        saved = self.global_steps >= self.total_training_steps or self.global_steps % trainer.save_freq == 0
        return not saved and should_save_ckpt_esi(
            max_steps_duration=self._longest_step_s + self._longest_validation_s,
            redundant_time=trainer.esi_redundant_time,
        )

    def _build_replay_buffer(self) -> Any:
        buffer = super()._build_replay_buffer()
        if self.config.trainer.device == "cpu":
            buffer.poll_interval = CPU_POLL_S
        return buffer

    def _next_train_batch(self, num_prompts: int | None = None) -> Any:
        batch = super()._next_train_batch(num_prompts)
        step, fetched = self._fetches
        fetched = fetched if step == self.global_steps else 0
        self._fetches = (self.global_steps, fetched + 1)
        tu.assign_non_tensor_stack(
            batch, "uid", [prompt_uid(self.global_steps, fetched, i) for i in range(len(batch))]
        )
        return batch

    def _balance_batch(self, batch: Any, metrics: dict, *args: Any, **kwargs: Any) -> Any:
        if batch.partition_id == "train":
            batch.reorder(sorted(range(len(batch.keys)), key=lambda i: natural_key(batch.keys[i])))
            log_dir = (self.config.reward.get("reward_kwargs") or {}).get("log_dir")
            if log_dir:  # every sample of the step is scored (and logged) before it is sampled here
                sort_rollouts(Path(log_dir), self.global_steps)
        return super()._balance_batch(batch, metrics, *args, **kwargs)

    def _validate(self, *args: Any, **kwargs: Any) -> Any:
        module = trainer_base.uuid
        # monkey-patches verl's module attribute ``uuid`` (the uuid module) for the validation pass
        trainer_base.uuid = ValidationNames(self.global_steps)
        try:
            return super()._validate(*args, **kwargs)
        finally:
            trainer_base.uuid = module

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
