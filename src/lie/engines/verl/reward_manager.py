"""verl 0.9 reward manager for LIE: grade, then call the core reward (``lie.core.reward.score``).

Selected by ``lie train`` through verl's reward-loop keys: ``reward.reward_manager.source=importlib``,
``.name=LIERewardManager`` and ``.module.path=pkg://lie.engines.verl.reward_manager``. verl imports a
``pkg://`` module by its package name (a file path would load it under a throw-away module name,
and nothing defined in it could then be pickled to a grading worker). Its knobs arrive as
``reward.reward_kwargs``:

- ``lie``: the ``lie.core.reward.RewardConfig`` keys of the run (baselines: both terms off);
- ``validation_sources``: data sources scored by accuracy alone (verl does not tell a manager
  whether a call is for validation, SPEC 6);
- ``log_dir``: where every training sample's reward and state metrics go, one JSON line each
  (``<log_dir>/step-<N>.<host>-<pid>.jsonl``), because verl's own training dumps in 0.9 do not
  carry ``reward_extra_info``; the same schema as the TRL engine's rollouts, and the only copy
  (verl's ``trainer.rollout_data_dir`` is off);
- ``grade_timeout_s``, ``grade_workers``: the grading executor's hard limit per item and size.

verl calls ``run_single`` once per finished trajectory, concurrently, in its reward-loop workers
(Ray actors, off the main thread); grading goes to the project's one grading executor
(``lie.grading.GradingExecutor``), whose workers import math-verify and ``lie.grading`` only.
"""

from __future__ import annotations

import logging
import os
import socket
from pathlib import Path
from typing import Any

from verl.experimental.reward_loop.reward_manager.base import RewardManagerBase

from lie.core.errors import LieError
from lie.core.reward import BREAKDOWN_KEYS, RewardConfig
from lie.engines.rewarding import Rewarder, Rollout
from lie.formats.runs import append_rollouts, rollout_record
from lie.grading.executor import default_workers

log = logging.getLogger(__name__)

MODULE_PATH = "pkg://lie.engines.verl.reward_manager"
EXTRA_KEYS = BREAKDOWN_KEYS  # every sample's reward_extra_info (verl needs the same keys for all)


class LIERewardManager(RewardManagerBase):
    """R = R_acc + R_len + R_red for one trajectory (SPEC 1), with its breakdown as extra info."""

    def __init__(
        self,
        config: Any,
        tokenizer: Any,
        compute_score: Any = None,
        reward_router_address: Any = None,
        reward_model_tokenizer: Any = None,
        **kwargs: Any,
    ):
        super().__init__(config, tokenizer, compute_score)
        kwargs_cfg = _plain(config.get("reward", {}).get("reward_kwargs") or {})
        self.reward_config = RewardConfig.from_mapping(
            kwargs_cfg.get("lie") or {}, source="reward.reward_kwargs.lie"
        )
        self.accuracy_only = self.reward_config.replace(length_term=False, redundancy_term=False)
        self.validation_sources = set(kwargs_cfg.get("validation_sources") or [])
        self.log_dir = Path(kwargs_cfg["log_dir"]) if kwargs_cfg.get("log_dir") else None
        missing = [k for k in ("grade_timeout_s", "grade_workers") if k not in kwargs_cfg]
        if missing:
            raise LieError(
                f"reward.reward_kwargs: no {', '.join(missing)}; `lie train` sets them from the config's "
                "evaluation section (lie.config.grading_limits)"
            )
        workers = grading_workers(kwargs_cfg["grade_workers"], config)
        self.rewarder = Rewarder(kwargs_cfg["grade_timeout_s"], workers)
        self._log_name = f"{socket.gethostname()}-{os.getpid()}"

    async def run_single(self, data: Any) -> dict[str, Any]:
        item = data[-1]
        responses = item.batch["responses"]
        length = int(item.batch["attention_mask"][-responses.shape[-1] :].sum())
        ids = responses[:length].tolist()
        text = self.tokenizer.decode(ids, skip_special_tokens=True)
        row = {key: _plain(value) for key, value in item.non_tensor_batch.items()}
        source = str(row.get("data_source"))
        validating = source in self.validation_sources
        config = self.accuracy_only if validating else self.reward_config
        sample = Rollout.of(row, text, ids, f"data source {source!r}")
        rewarded = await self.rewarder.reward(sample, config)
        result = rewarded.breakdown
        info = result.extra_info(length, sample.answer.ref_len)
        if not validating and self.log_dir is not None:
            self._log(row, len(data) - 1, text, rewarded.status, result, length, sample.answer.ref_len)
        return {"reward_score": result.reward, "reward_extra_info": info}

    def _log(
        self, row: Any, turn: int, text: str, status: str, result: Any, length: int, ref: int | None
    ) -> None:
        """One JSON line per training sample, in the rollout schema both engines share (lie.formats.runs):
        its group is the prompt's ``uid`` (shared by the ``rollout.n`` samples of a prompt), its own id
        ``<uid>_<session_id>_<turn>``, the key verl gives the sample in its TransferQueue."""
        step = int(_plain(row.get("global_steps", -1)))
        group, session = _plain(row.get("uid")), _plain(row.get("session_id"))
        if group is None or session is None:
            raise LieError(
                "verl passed a training sample without its uid or session_id: no unique rollout id"
            )
        sample_id = f"{group}_{session}_{turn}"
        index = _plain(row.get("index", -1))
        record = rollout_record(step, group, sample_id, index, text, result, length, ref, status)
        assert self.log_dir is not None  # run_single logs only when log_dir is set
        append_rollouts(self.log_dir, step, self._log_name, [record])


def grading_workers(configured: int, config: Any) -> int:
    """The grading pool of one manager. verl starts ``reward.num_workers`` managers (8 by default) spread
    over ``trainer.nnodes`` nodes; with ``grade_workers: 0`` ("one per core") each manager takes its
    share of the node's cores, so that a node runs about one grading process per core in all rather
    than one per core per manager (4 managers on a node of 32 cores: 8 each, not 32)."""
    if configured:
        return configured
    managers = int(config.get("reward", {}).get("num_workers") or 1)
    nodes = max(1, int(config.get("trainer", {}).get("nnodes") or 1))
    per_node = -(-managers // nodes)
    return max(1, default_workers() // per_node)


def _plain(value: Any) -> Any:
    """numpy scalars and arrays and OmegaConf nodes to plain Python values, inside mappings and lists
    too (a row's ``reward_model`` and ``extra_info`` as ``lie.formats.rows`` reads them)."""
    from omegaconf import DictConfig, ListConfig, OmegaConf

    if isinstance(value, (DictConfig, ListConfig)):
        return OmegaConf.to_container(value, resolve=True)
    if hasattr(value, "tolist") and not isinstance(value, (list, dict, str)):
        value = value.tolist()
    if isinstance(value, dict):
        return {key: _plain(v) for key, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value
