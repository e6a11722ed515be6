"""A CPU platform for verl, registered on import with verl's ``PlatformRegistry`` as ``cpu`` (``VERL_PLATFORM=cpu``).

verl asks its platform for the device, the collective backend and a ``torch.cuda``-like device
module. On a CPU: gloo, ``torch.device("cpu")`` (verl passes ``current_device()`` straight to
``.to()``, so it must not be an accelerator index), and memory and stream calls that do nothing.
Ray resources stay named ``GPU``: verl's resource pools count only GPU/NPU bundles, so Ray is
started with as many fake GPUs as the run has workers (``+ray_kwargs.ray_init.num_gpus``).
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Any

import torch
from verl.plugin.platform.platform_base import PlatformBase
from verl.plugin.platform.platform_manager import PlatformRegistry

NAME = "cpu"


def _nothing(*args: Any, **kwargs: Any) -> None:
    return None


def _zero(*args: Any, **kwargs: Any) -> int:
    return 0


def _memory_info(*args: Any, **kwargs: Any) -> tuple[int, int]:
    import psutil

    memory = psutil.virtual_memory()
    return memory.available, memory.total


class CPUDeviceModule:
    """What verl calls on ``get_torch_device()``: ``torch.cpu`` plus the ``torch.cuda`` calls it makes."""

    is_available = staticmethod(lambda: True)
    device_count = staticmethod(lambda: 1)
    current_device = staticmethod(lambda: torch.device("cpu"))
    get_device_name = staticmethod(lambda *a, **k: "cpu")
    get_device_capability = staticmethod(lambda *a, **k: (None, None))
    set_device = synchronize = empty_cache = ipc_collect = staticmethod(_nothing)
    reset_peak_memory_stats = reset_max_memory_allocated = staticmethod(_nothing)
    memory_allocated = max_memory_allocated = memory_reserved = max_memory_reserved = staticmethod(_zero)
    memory_stats = staticmethod(lambda *a, **k: {})
    mem_get_info = staticmethod(_memory_info)
    manual_seed = manual_seed_all = staticmethod(torch.manual_seed)
    get_rng_state = staticmethod(torch.get_rng_state)
    set_rng_state = staticmethod(torch.set_rng_state)
    get_rng_state_all = staticmethod(lambda: [torch.get_rng_state()])
    set_rng_state_all = staticmethod(lambda states: torch.set_rng_state(states[0]))

    def __getattr__(self, name: str) -> Any:  # anything else: torch.cpu's own (Stream, Event, ...)
        return getattr(torch.cpu, name)


DEVICE_MODULE = CPUDeviceModule()


class CPUPlatform(PlatformBase):
    """verl's platform interface on a CPU."""

    @property
    def device_name(self) -> str:
        return NAME

    @property
    def vendor_name(self) -> str:
        return NAME

    @property
    def device_module(self) -> Any:
        return DEVICE_MODULE

    def is_available(self) -> bool:
        return True

    def is_platform_available(self, use_smi_check: bool = False) -> bool:
        return os.environ.get("VERL_PLATFORM", "").strip().lower() == NAME

    # verl annotates an int index, but passes current_device() to .to(): a CPU needs a torch.device
    def current_device(self) -> torch.device:
        return torch.device("cpu")

    def device_count(self) -> int:
        return 1

    def set_device(self, device_index: int) -> None:
        return None

    def synchronize(self, device_index: int | None = None) -> None:
        return None

    def manual_seed(self, seed: int) -> None:
        torch.manual_seed(seed)

    def manual_seed_all(self, seed: int) -> None:
        torch.manual_seed(seed)

    def set_allocator_settings(self, settings: str) -> None:
        return None

    def empty_cache(self) -> None:
        return None

    def get_device_capability(self, device_index: int = 0) -> tuple[None, None]:
        return None, None

    def communication_backend_name(self) -> str:
        return "gloo"

    def visible_devices_envvar(self) -> str:
        return "CUDA_VISIBLE_DEVICES"

    @contextmanager
    def nvtx_range(self, msg: str):
        yield

    def profiler_start(self) -> None:
        return None

    def profiler_stop(self) -> None:
        return None

    def ray_resource_name(self) -> str:
        return "GPU"  # fake GPUs: verl's resource pools count only GPU/NPU

    def ray_noset_envvars(self) -> list[str]:
        return []

    def is_ipc_supported(self) -> bool:
        return False

    def rollout_env_vars(self) -> dict[str, str]:
        """The environment of verl's vLLM server actor (and vLLM's processes under it) on the CPU:
        a KV cache of ``VLLM_CPU_KVCACHE_SPACE`` GiB (default 1; else vLLM takes
        ``gpu_memory_utilization`` of the RAM and refuses more than is free) and no ``torch.compile``
        (its CPU sampler's compile alone takes 20-50 s of every start)."""
        return {
            "VLLM_CPU_KVCACHE_SPACE": os.environ.get("VLLM_CPU_KVCACHE_SPACE", "1"),
            "TORCH_COMPILE_DISABLE": "1",
        }

    def cudart(self) -> None:
        return None


PlatformRegistry.register(platform=NAME)(CPUPlatform)
