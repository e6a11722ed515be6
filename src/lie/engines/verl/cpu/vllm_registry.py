"""Rollout ``vllm`` on the CPU: verl's two rollout registries point at ``lie.engines.verl.cpu.vllm_rollout``.

verl registers its own vLLM replica when ``verl.workers.rollout.replica`` is imported
(``RolloutReplicaRegistry.register("vllm", _load_vllm)``) and names its worker-side ``ServerAdapter``
in ``verl.workers.rollout.base._ROLLOUT_REGISTRY`` (a module dict, no register call). Both entries are
replaced here by loaders of our module, which imports vLLM only when a run asks for rollout ``vllm``;
in ``.venv`` (no vLLM) they are never called.
"""

from __future__ import annotations

import importlib

from verl.workers.rollout import base as rollout_base
from verl.workers.rollout.replica import RolloutReplicaRegistry

NAME = "vllm"
MODULE = "lie.engines.verl.cpu.vllm_rollout"


def _replica() -> type:
    return importlib.import_module(MODULE).CPUvLLMReplica


RolloutReplicaRegistry.register(NAME, _replica)
rollout_base._ROLLOUT_REGISTRY[(NAME, "async")] = f"{MODULE}.ServerAdapter"
