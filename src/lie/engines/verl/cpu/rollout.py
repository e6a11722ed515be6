"""A transformers rollout for verl on a CPU, registered as rollout ``transformers``.

verl's agent loop sends one token-in/token-out ``generate`` call per sample to a rollout server
(a Ray actor); on GPUs that server is vLLM. Here :class:`TransformersServer` plays it: concurrent
calls are gathered into one batch (``lie.engines.sampling``) and answered together. A run is
reproducible: each request is seeded by the sample it is (``lie.engines.verl.cpu.agent_loop`` tags
it), and a batch is ordered by seed and left-padded to the run's prompt length, so neither arrival
order nor which requests arrived together changes a sample's tokens or log-probs.
:class:`TransformersReplica` starts the server through verl's ``RolloutReplicaRegistry``, and
:class:`TransformersAdapter`, the rollout object inside verl's FSDP worker, pushes the actor's
weights to the server on every weight sync (verl's "naive" hybrid sync).
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from dataclasses import replace
from typing import Any

import ray
import torch
from verl.workers.rollout import base as rollout_base
from verl.workers.rollout.base import BaseRollout
from verl.workers.rollout.replica import RolloutReplica, RolloutReplicaRegistry, TokenOutput

from lie.engines.sampling import TokenRequest, sample_batch
from lie.engines.verl.cpu.agent_loop import SAMPLE_KEY
from lie.engines.verl.cpu.seeds import SampleSeeds

log = logging.getLogger(__name__)

NAME = "transformers"
BATCH_WINDOW_S = 0.05  # how long a first request waits for its siblings to arrive
THREADS_ENV = "LIE_CPU_ROLLOUT_THREADS"  # torch threads of the rollout server (default 1)


def _server_name(replica_rank: int) -> str:
    return f"lie_cpu_rollout_{replica_rank}"


def _model_path(model_config: Any) -> str:
    """The local model folder of verl's model config (a dataclass or a DictConfig)."""
    for key in ("local_path", "path"):
        value = getattr(model_config, key, None)
        if value is None and hasattr(model_config, "get"):
            value = model_config.get(key)
        if value:
            return str(value)
    raise ValueError(f"verl's model config names no model path: {model_config!r}")


def _eos_ids(model: Any) -> list[int]:
    ids: list[int] = []
    for value in (model.generation_config.eos_token_id, model.config.eos_token_id):
        for v in value if isinstance(value, (list, tuple)) else [value]:
            if v is not None and int(v) not in ids:
                ids.append(int(v))
    return ids


class TransformersServer:
    """verl's rollout-server interface over a transformers model, requests batched as they arrive."""

    def __init__(self, config: Any, model_config: Any, replica_rank: int):
        from transformers import AutoModelForCausalLM

        torch.set_num_threads(int(os.environ.get(THREADS_ENV, "1")))
        self.config = config
        self.model = AutoModelForCausalLM.from_pretrained(
            _model_path(model_config), dtype=torch.float32, attn_implementation="sdpa"
        )
        self.model.eval()
        self.eos_ids = _eos_ids(self.model)
        pad = self.model.config.pad_token_id
        self.pad_id = int(pad) if pad is not None else (self.eos_ids[0] if self.eos_ids else 0)
        self.generator = torch.Generator().manual_seed(int(getattr(config, "seed", 0) or 0) + replica_rank)
        self.lock = threading.Lock()  # sampling and weight updates never overlap
        self.global_steps: int | None = None
        self.seeds = SampleSeeds(int(getattr(config, "seed", 0) or 0))
        self.queue: asyncio.Queue | None = None
        self.batcher: asyncio.Task | None = None

    # weights
    def update_weights(self, state_dict: dict[str, torch.Tensor], global_steps: int | None = None) -> int:
        with self.lock:
            missing, unexpected = self.model.load_state_dict(state_dict, strict=False)
            self.global_steps = global_steps
        tied = {"lm_head.weight"} if self.model.config.tie_word_embeddings else set()
        if set(missing) - tied or unexpected:
            raise RuntimeError(f"weight sync: missing {sorted(set(missing) - tied)}, unexpected {unexpected}")
        return len(state_dict)

    # generation
    def _request(self, prompt_ids: list[int], params: dict[str, Any]) -> TokenRequest:
        """vLLM server's budget rule: the run's response length, within the model's context."""
        cfg = self.config
        room = int(cfg.max_model_len) - len(prompt_ids) if cfg.max_model_len else int(cfg.response_length)
        if room < 1:
            raise ValueError(
                f"a prompt of {len(prompt_ids)} tokens leaves no room within {cfg.max_model_len}"
            )
        wanted = params.get("max_tokens", params.get("max_new_tokens"))
        if wanted is None:
            wanted = min(cfg.response_length, cfg.prompt_length + cfg.response_length - len(prompt_ids))
        return TokenRequest(
            prompt_ids=list(prompt_ids),
            max_tokens=max(1, min(int(wanted), room)),
            temperature=float(params.get("temperature", 1.0)),
            top_p=float(params.get("top_p", 1.0)),
            top_k=int(params.get("top_k", -1) or -1),
            seed=params.get("seed"),
            # as verl's vLLM server: a request's own value, else the rollout config's
            ignore_eos=bool(params.get("ignore_eos", getattr(cfg, "ignore_eos", False))),
        )

    def _sample(self, requests: list[TokenRequest]):
        width = int(getattr(self.config, "prompt_length", 0) or 0)  # one padded width for every batch
        with self.lock:
            return sample_batch(self.model, requests, self.eos_ids, self.pad_id, self.generator, width=width)

    async def _serve(self) -> None:
        assert self.queue is not None
        while True:
            batch = [await self.queue.get()]
            await asyncio.sleep(BATCH_WINDOW_S)
            while not self.queue.empty():
                batch.append(self.queue.get_nowait())
            batch.sort(key=lambda item: item[0].seed)  # rows in an order of their own, not of arrival
            try:
                samples = await asyncio.to_thread(self._sample, [request for request, _, _ in batch])
            except Exception as exc:  # every waiting caller sees the failure
                for _, _, future in batch:
                    if not future.done():
                        future.set_exception(exc)
                continue
            for (_, want_logprobs, future), sample in zip(batch, samples):
                if not future.done():
                    future.set_result(
                        TokenOutput(
                            token_ids=sample.token_ids,
                            log_probs=sample.log_probs if want_logprobs else None,
                            stop_reason="completed",
                            extra_fields={"global_steps": self.global_steps},
                        )
                    )

    async def generate(self, prompt_ids, sampling_params, request_id, **kwargs) -> TokenOutput:
        if self.queue is None:
            self.queue = asyncio.Queue()
            self.batcher = asyncio.get_running_loop().create_task(self._serve())
        params = dict(sampling_params)
        sample = params.pop(SAMPLE_KEY, None)
        request = self._request(list(prompt_ids), params)
        if request.seed is None:
            request = replace(request, seed=self.request_seed(request, sample))
        future = asyncio.get_running_loop().create_future()
        self.queue.put_nowait((request, bool(params.get("logprobs")), future))
        return await future

    def request_seed(self, request: TokenRequest, sample: list[int] | None = None) -> int:
        """A seed of the request's own (:class:`lie.engines.verl.cpu.seeds.SampleSeeds`), keyed by its
        prompt and sampling settings."""
        key = (tuple(request.prompt_ids), request.max_tokens, request.temperature, request.top_p,
               request.top_k, request.ignore_eos)  # fmt: skip
        return self.seeds.seed(self.global_steps, key, sample)

    # verl's lifecycle calls: nothing to free or restore on a CPU
    async def wake_up(self):
        return None

    async def sleep(self):
        return None

    async def clear_kv_cache(self):
        return None

    async def release_kv_cache(self):
        return None

    async def resume_kv_cache(self):
        return None

    async def abort_all_requests(self, reject_request: bool = False):
        return {"aborted_count": 0, "request_ids": []}

    async def resume_generation(self):
        return None

    async def start_profile(self, **kwargs):
        return None

    async def stop_profile(self):
        return None


class TransformersReplica(RolloutReplica):
    """One rollout server per replica, a Ray actor on the driver's node (it needs no GPU)."""

    async def launch_servers(self):
        server = (
            ray.remote(TransformersServer)
            .options(name=_server_name(self.replica_rank), num_cpus=0, max_concurrency=self.max_concurrency)
            .remote(config=self.config, model_config=self.model_config, replica_rank=self.replica_rank)
        )
        await server.wake_up.remote()  # the model is loaded
        self.servers = [server]
        self._server_handle = server
        self._server_address = f"{NAME}-{self.replica_rank}"


class TransformersAdapter(BaseRollout):
    """The rollout inside verl's FSDP worker: forwards the actor's full weights to the server."""

    def __init__(self, config, model_config, device_mesh, replica_rank: int = -1, **kwargs):
        super().__init__(config, model_config, device_mesh)
        size = (
            self.config.tensor_model_parallel_size
            * self.config.data_parallel_size
            * self.config.pipeline_model_parallel_size
        )
        rank = int(os.environ.get("RANK", "0"))
        self.replica_rank = rank // size if replica_rank == -1 else replica_rank
        self.is_leader = rank % size == 0
        self.sleep_level = 1

    async def resume(self, tags: list[str]):
        return None

    async def release(self):
        return None

    async def update_weights(self, weights, wire_format: str = "named_tensors", **kwargs):
        if wire_format != "named_tensors":
            raise ValueError(f"the CPU rollout takes full named tensors, not {wire_format!r}")
        state = full_cpu_state(weights)
        if self.is_leader:
            server = ray.get_actor(_server_name(self.replica_rank))
            count = await server.update_weights.remote(state, kwargs.get("global_steps"))
            log.info("rollout weights synced: %d tensors", count)


def full_cpu_state(weights) -> dict[str, Any]:
    """verl's ``(name, tensor)`` pairs as whole CPU tensors of their own: a DTensor shard (FSDP2's
    parameters) is gathered whole first; a copy, since verl reuses its buffers after the sync."""
    state = {}
    for name, tensor in weights:
        if hasattr(tensor, "full_tensor"):
            tensor = tensor.full_tensor()
        state[name] = tensor.detach().to("cpu", copy=True)
    return state


# ``actor_rollout_ref.rollout.name=transformers``, known to verl on import (replica and worker side).
RolloutReplicaRegistry.register(NAME, lambda: TransformersReplica)
# verl/workers/rollout/base.py keeps worker-side rollouts in a module dict with no register call.
rollout_base._ROLLOUT_REGISTRY[(NAME, "async")] = f"{__name__}.TransformersAdapter"
