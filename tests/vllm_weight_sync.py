"""Run by tests/test_vllm_verl.py with .venv-vllm's python: verl's weight sync into vLLM's AsyncLLM.

``python tests/vllm_weight_sync.py OLD NEW``: an AsyncLLM engine (engine core in its own process,
as verl's rollout server runs it) starts on model OLD with verl's worker extension; verl's
``BucketedWeightSender`` pushes NEW's weights over shared memory in 1 MiB buckets while the
workers run the extension's ``update_weights_from_ipc`` (the receiver), as verl's
``vLLMHttpServer`` drives it. Prints one JSON line: the greedy continuation of a prompt before and
after the sync, and the transformers greedy continuation under NEW's weights (``lie.engines.sampling``).
"""

from __future__ import annotations

import asyncio
import json
import sys

PROMPT = [1, 50, 60, 70, 80, 90]
MAX_TOKENS = 12
# verl's default handle for replica 0, rank 0 (vLLMColocateWorkerExtension._get_zmq_handle)
HANDLE = "ipc:///tmp/rl-colocate-zmq-0-replica-0-rank-0.sock"


async def run(old: str, new: str) -> dict:
    import torch
    from transformers import AutoModelForCausalLM
    from vllm import SamplingParams
    from vllm.engine.arg_utils import AsyncEngineArgs
    from vllm.inputs import TokensPrompt
    from vllm.v1.engine.async_llm import AsyncLLM

    from lie.engines.verl.cpu.vllm_worker import import_verl_vllm

    import_verl_vllm()
    from verl.workers.rollout.vllm_rollout.bucketed_weight_transfer import BucketedWeightSender

    args = AsyncEngineArgs(
        model=old, dtype="float32", enforce_eager=True, max_model_len=64,
        worker_extension_cls="lie.engines.verl.cpu.vllm_worker.vLLMColocateWorkerExtension",
    )  # fmt: skip
    engine = AsyncLLM.from_engine_args(args)

    async def greedy(request_id: str) -> list[int]:
        params = SamplingParams(temperature=0.0, max_tokens=MAX_TOKENS, ignore_eos=True)
        final = None
        async for out in engine.generate(
            TokensPrompt(prompt_token_ids=PROMPT), params, request_id=request_id
        ):
            final = out
        return list(final.outputs[0].token_ids)

    try:
        before = await greedy("before")
        model = AutoModelForCausalLM.from_pretrained(new, dtype=torch.float32)
        sender = BucketedWeightSender(HANDLE, bucket_size_mb=1, use_shm=True)
        receive = asyncio.create_task(
            engine.collective_rpc("update_weights_from_ipc", kwargs={"use_shm": True})
        )
        weights = [(name, p.detach()) for name, p in model.named_parameters()]
        # the sender blocks on its socket: its own thread (in verl, its own process: the FSDP worker)
        send = asyncio.ensure_future(asyncio.to_thread(asyncio.run, sender.async_send_weights(iter(weights))))
        await asyncio.wait([receive, send], return_when=asyncio.FIRST_EXCEPTION)
        receive.result()  # the workers' error, if any (the sender then waits for ever: exit)
        await send
        await engine.reset_prefix_cache()  # the cached prompt blocks hold the old weights' keys
        after = await greedy("after")
    finally:
        engine.shutdown()
    from lie.engines.sampling import TokenRequest, sample_batch

    request = TokenRequest(PROMPT, MAX_TOKENS, temperature=0.0, ignore_eos=True)
    (reference,) = sample_batch(model, [request], eos_ids=[], pad_id=0)
    return {"before": before, "after": after, "transformers": reference.token_ids}


if __name__ == "__main__":  # vLLM spawns its engine core: the guard keeps it from rerunning this
    print(json.dumps(asyncio.run(run(sys.argv[1], sys.argv[2]))))
