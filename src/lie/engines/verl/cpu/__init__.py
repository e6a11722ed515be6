"""verl's real trainer on a CPU: the tests and ``make smoke`` run ``verl.trainer.main_ppo`` with it.

Everything goes through verl's extension points, loaded in every verl process (Ray workers
included) by ``VERL_USE_EXTERNAL_MODULES=lie.engines.verl.cpu.plugin``:

- ``platform``: a ``cpu`` platform (``PlatformRegistry``; selected by ``VERL_PLATFORM=cpu``);
- ``engines``: verl's own FSDP engines registered for device ``cpu`` (``EngineRegistry``);
- ``rollout``: a batched transformers rollout server (``RolloutReplicaRegistry``), rollout name
  ``transformers``, where the cluster runs vLLM;
- ``vllm_registry``: rollout ``vllm`` as verl's own vLLM server on vLLM's CPU build
  (``vllm_rollout``; ``.venv-vllm``), for a run whose ``cpu_rollout`` is ``vllm``;
- ``agent_loop``: verl's single-turn agent loop that tells that server which sample each request
  is (agent loop ``lie_single_turn``), so that a CPU run is reproducible;
- ``patches``: three lines of verl and torch that cannot run on a CPU, each named, each with a test
  that fails once they are fixed (two of them let verl's FSDP1 engine, the cluster's strategy, run).

This package's top level imports nothing of verl or torch: ``lie train`` reads the CPU settings
below without loading the backend, and on a GPU machine nothing of it is loaded at all.
"""

from __future__ import annotations

import os
from typing import Any

PLUGIN = "lie.engines.verl.cpu.plugin"
ROLLOUT = "transformers"
AGENT_LOOP = "lie_single_turn"  # lie.engines.verl.cpu.agent_loop.NAME (not imported: no verl here)
RAY_INIT = "+ray_kwargs.ray_init."  # verl's ray.init arguments, for a Ray it starts itself
RAY_CPUS = 16  # Ray's logical CPUs for verl's many small actors (agent loop, reward, storage)


# What a CPU run changes in the cluster's verl overrides, and nothing more (printed by --dry-run);
# :func:`overrides` adds the number of FSDP ranks.
OVERRIDES: dict[str, Any] = {
    "trainer.device": "cpu",
    "actor_rollout_ref.rollout.name": ROLLOUT,  # vLLM needs a GPU
    # the actor's strategy is the cluster's (verl's FSDP1, ``strategy: fsdp``, with param and optimizer
    # offload), through two patches of patches.py; the entropy kernel stays uncompiled (below)
    "+actor_rollout_ref.model.override_config.attn_implementation": "sdpa",  # no flash-attn on a CPU
    "actor_rollout_ref.actor.use_torch_compile": False,
    # the engine workers read their FSDP engine's own flag (true by default): inductor's C++ compiler
    # in every actor process, for an entropy kernel the GPU never runs
    "actor_rollout_ref.actor.fsdp_config.use_torch_compile": False,
    "actor_rollout_ref.ref.fsdp_config.use_torch_compile": False,
    f"{RAY_INIT}num_cpus": RAY_CPUS,
    f"{RAY_INIT}include_dashboard": False,
    "transfer_queue.backend.SimpleStorage.num_data_storage_units": 1,  # 8 by default, a Ray CPU each
    "actor_rollout_ref.rollout.agent.num_workers": 1,
    "actor_rollout_ref.rollout.agent.default_agent_loop": AGENT_LOOP,  # seeds by sample: reproducible
    "data.dataloader_num_workers": 0,  # no loader processes on a few cores
    "reward.num_workers": 1,
}


# Rollout ``vllm`` (a run's ``cpu_rollout``): verl's own vLLM server on vLLM's CPU build
# (lie.engines.verl.cpu.vllm_rollout), main_ppo in engines.vllm_cpu.venv. What differs from the cluster:
VLLM_ROLLOUT = "vllm"
VLLM_OVERRIDES: dict[str, Any] = {
    "actor_rollout_ref.rollout.name": VLLM_ROLLOUT,
    # vLLM's CPU platform has no sleep mode (vllm/config/model.py refuses it); the key is not in
    # verl's rollout.yaml (a dataclass default, True), hence the +
    "+actor_rollout_ref.rollout.enable_sleep_mode": False,
    "actor_rollout_ref.rollout.free_cache_engine": False,  # nothing to free between steps on a CPU
    "actor_rollout_ref.rollout.enforce_eager": True,  # no torch.compile: a C++ compiler and minutes
    "actor_rollout_ref.rollout.dtype": "float32",  # as the actor and the transformers rollout
    # vLLM 0.24's CPU sampler cannot resume a seeded request whose prefill was split over two
    # scheduler steps ("CPU Generator does not use offset"); every request is seeded (per sample)
    "actor_rollout_ref.rollout.enable_chunked_prefill": False,
}
ROLLOUTS = (ROLLOUT, VLLM_ROLLOUT)


def overrides(nnodes: int = 1, gpus_per_node: int = 1, rollout: str = ROLLOUT) -> dict[str, Any]:
    """OVERRIDES for the cluster's shape, ``nnodes`` x ``gpus_per_node`` FSDP ranks, one process each
    and one fake GPU each (verl's resource pools count GPU bundles). verl composes its resource pool as
    on the cluster (``trainer.nnodes`` pools of ``gpus_per_node``): with ``RAY_ADDRESS`` set (a Ray
    cluster of that many nodes, as the Slurm launcher starts) verl joins it and leaves Ray's resources
    to it; without, verl's own Ray on this machine gets every fake GPU, and the pools share its one node.
    ``rollout`` ``vllm`` samples with verl's vLLM server (VLLM_OVERRIDES)."""
    if rollout not in ROLLOUTS:
        raise ValueError(f"CPU rollout {rollout!r} is not one of {ROLLOUTS}")
    nnodes, gpus_per_node = int(nnodes), int(gpus_per_node)
    chosen = {**OVERRIDES, **(VLLM_OVERRIDES if rollout == VLLM_ROLLOUT else {})}
    chosen.update({"trainer.nnodes": nnodes, "trainer.n_gpus_per_node": gpus_per_node})
    if os.environ.get("RAY_ADDRESS"):  # ray.init refuses resources when it connects to a cluster
        joined = {k: v for k, v in chosen.items() if not k.startswith(RAY_INIT)}
        # the cluster's processes were started without this run's environment: verl's job carries it
        env = environment()
        joined.update({f"{RAY_INIT}runtime_env.env_vars.{key}": env[key] for key in WORKER_ENV})
        return joined
    # a Ray of its own, never another one running on this machine (ray.init would join that one)
    return {**chosen, f"{RAY_INIT}num_gpus": nnodes * gpus_per_node, f"{RAY_INIT}address": "local"}


# A GPU run whose ``gpu_rollout`` is ``transformers``: verl's FSDP workers on the GPUs as the cluster runs
# them, the rollouts from the transformers server on the CPU beside them (rollout_plugin registers it and
# the sample-tagging agent loop, nothing of the CPU platform): a verl run where vLLM is not installed.
ROLLOUT_PLUGIN = "lie.engines.verl.cpu.rollout_plugin"
GPU_ROLLOUTS = (VLLM_ROLLOUT, ROLLOUT)


def gpu_rollout_overrides(rollout: str) -> dict[str, Any]:
    """What a GPU run's ``gpu_rollout`` changes in the cluster's overrides (nothing for vllm): the rollout,
    its agent loop, and torch's SDPA attention for the actor (verl asks for flash-attn's by default)."""
    if rollout not in GPU_ROLLOUTS:
        raise ValueError(f"GPU rollout {rollout!r} is not one of {GPU_ROLLOUTS}")
    if rollout == VLLM_ROLLOUT:
        return {}
    return {
        "actor_rollout_ref.rollout.name": ROLLOUT,
        "actor_rollout_ref.rollout.agent.default_agent_loop": AGENT_LOOP,
        # a machine without vLLM lacks flash-attn too (verl's default attention): torch's own
        "+actor_rollout_ref.model.override_config.attn_implementation": "sdpa",
    }


def with_module(env: dict[str, str], module: str) -> dict[str, str]:
    """``env`` with ``module`` last in VERL_USE_EXTERNAL_MODULES (every verl process imports it)."""
    modules = [m for m in env.get("VERL_USE_EXTERNAL_MODULES", "").split(",") if m and m != module]
    return {**env, "VERL_USE_EXTERNAL_MODULES": ",".join([*modules, module])}


WORKER_ENV = ("VERL_PLATFORM", "VERL_USE_EXTERNAL_MODULES", "TOKENIZERS_PARALLELISM", "OMP_NUM_THREADS")


def environment(base: dict[str, str] | None = None) -> dict[str, str]:
    """The process environment of a CPU run: the plugin in every verl process, no visible GPU."""
    env = dict(os.environ if base is None else base)
    env.pop("CUDA_VISIBLE_DEVICES", None)  # Ray refuses num_gpus when it is set but empty
    env = with_module(env, PLUGIN)
    env.update(
        VERL_PLATFORM="cpu",
        RAY_USAGE_STATS_ENABLED="0",
        RAY_DEDUP_LOGS="0",
        TOKENIZERS_PARALLELISM="false",
    )
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def gpu_visible() -> bool:
    import torch

    return bool(torch.cuda.is_available())
