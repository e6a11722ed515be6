"""verl's vLLM rollout on vLLM's CPU build (``.venv-vllm``), registered as rollout ``vllm`` there.

verl's own classes run unchanged (``vLLMHttpServer``, an ``AsyncLLM`` in a Ray actor; its
``ServerAdapter`` in each FSDP worker; its bucketed shared-memory weight sync); three things differ,
each the smallest override verl's classes allow:

- the worker extension vLLM imports in its worker process is named by
  ``vLLMHttpServer._get_worker_extension_cls`` (verl 0.9.1 ``vllm_async_server.py`` line 1275, verl's
  own ``verl.workers.rollout.vllm_rollout.utils.vLLMColocateWorkerExtension``); ours,
  ``lie.engines.verl.cpu.vllm_worker``, is the same class imported with the version shim and the
  linear-weight patch that vLLM's CPU build needs;
- ``generate`` takes out the sample tag of our agent loop (``lie_sample``; vLLM's ``SamplingParams``
  refuses an unknown key) and seeds the request by the sample it is, as the transformers rollout
  does (:class:`lie.engines.verl.cpu.seeds.SampleSeeds`);
- ``_validate_configs`` also refuses sleep mode, which vLLM's CPU platform cannot do, naming the verl
  key that turns it off.

This module imports vLLM and verl's vLLM code (after :func:`import_verl_vllm`): it is loaded only
where a run asks for rollout ``vllm`` on the CPU (``lie.engines.verl.cpu.vllm_registry``), in the
TaskRunner (the replica), the server actor (Ray unpickles the class from here) and each FSDP worker
(verl's rollout registry names :data:`ServerAdapter` here).
"""

from __future__ import annotations

from typing import Any

import ray

from lie.engines.verl.cpu.vllm_version import import_verl_vllm

import_verl_vllm()

from verl.workers.rollout.vllm_rollout import ServerAdapter  # noqa: E402  (re-exported: the worker side)
from verl.workers.rollout.vllm_rollout.vllm_async_server import vLLMHttpServer, vLLMReplica  # noqa: E402

from lie.engines.verl.cpu.agent_loop import SAMPLE_KEY  # noqa: E402
from lie.engines.verl.cpu.seeds import SampleSeeds  # noqa: E402

WORKER_EXTENSION = "lie.engines.verl.cpu.vllm_worker.vLLMColocateWorkerExtension"
SLEEP_MODE_OFF = "+actor_rollout_ref.rollout.enable_sleep_mode=false"


class CPUvLLMHttpServer(vLLMHttpServer):
    """verl's vLLM server with our worker extension and per-sample seeds."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.seeds = SampleSeeds(int(self.config.seed or 0))  # a sample's seed, whichever replica serves it

    def _get_worker_extension_cls(self) -> str:
        return WORKER_EXTENSION

    def _validate_configs(self) -> None:
        super()._validate_configs()
        if self.config.enable_sleep_mode:
            raise ValueError(
                f"vLLM's CPU build has no sleep mode: add {SLEEP_MODE_OFF} "
                "(lie.engines.verl.cpu.VLLM_OVERRIDES does)"
            )

    async def generate(self, prompt_ids: list[int], sampling_params: dict[str, Any], request_id: str,
                       *args: Any, **kwargs: Any):  # fmt: skip
        params = dict(sampling_params)
        sample = params.pop(SAMPLE_KEY, None)
        if params.get("seed") is None:
            key = (tuple(int(t) for t in prompt_ids), sorted(params.items()))
            params["seed"] = self.seeds.seed(self.global_steps, key, sample)
        return await super().generate(prompt_ids, params, request_id, *args, **kwargs)


class CPUvLLMReplica(vLLMReplica):
    """verl's vLLM replica, starting :class:`CPUvLLMHttpServer` instead of verl's server."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.server_class = ray.remote(CPUvLLMHttpServer)


__all__ = ["CPUvLLMHttpServer", "CPUvLLMReplica", "ServerAdapter"]
