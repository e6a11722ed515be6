"""The three places where verl 0.9.1 (and torch under it) cannot run on a CPU as it is; each patch names the
line it works around.

tests/test_verl_cpu.py runs verl's unpatched code for each and fails once verl (or TRL) fixes
it, so that the patch is removed then.
"""

from __future__ import annotations

import torch
import verl.models.transformers.monkey_patch as monkey_patch
import verl.utils.distributed as distributed
import verl.utils.fsdp_utils as fsdp_utils

ORIGINAL_INIT_PROCESS_GROUP = getattr(
    distributed.initialize_global_process_group_ray,
    "__wrapped__",
    distributed.initialize_global_process_group_ray,
)


def _init_process_group(timeout_second=None, backend=None):
    """verl/utils/distributed.py, initialize_global_process_group_ray: the default backend is
    ``f"cpu:gloo,{get_device_name()}:{get_nccl_backend()}"``, which on a CPU is "cpu:gloo,cpu:gloo"
    and torch refuses ("Duplicate device type cpu"); one gloo backend is all a CPU needs."""
    return ORIGINAL_INIT_PROCESS_GROUP(timeout_second=timeout_second, backend=backend or "cpu:gloo")


# a function attribute (functools' convention): marks the patch and names the original
_init_process_group.__wrapped__ = ORIGINAL_INIT_PROCESS_GROUP  # type: ignore[attr-defined]


def _no_value_head_patch() -> bool:
    """verl/models/transformers/monkey_patch.py, apply_monkey_patch: ``if is_trl_available():``
    imports ``AutoModelForCausalLMWithValueHead`` from ``trl.experimental.ppo`` or ``trl``; TRL 1.16
    (our CPU training engine) has it in neither, so every FSDP actor build raises ImportError. The
    patch it guards only matters for TRL's value-head models, which verl's actor never uses."""
    return False


def _states_on_any_device(module_states) -> None:
    """torch/distributed/fsdp/_init_utils.py, _check_module_states_for_sync_module_states: FSDP1
    (verl's ``strategy: fsdp``, the cluster's) refuses ``sync_module_states=True`` for CPU tensors,
    though the broadcast it guards (``_sync_params_and_buffers``) runs on gloo with CPU tensors as
    it does on NCCL with CUDA ones. verl builds FSDP1 with ``sync_module_states=True`` and the
    device's id, so without this FSDP1 cannot start on a CPU at all."""
    return None


ORIGINAL_LOAD_TO_DEVICE = getattr(
    fsdp_utils.load_fsdp_model_to_gpu, "__wrapped__", fsdp_utils.load_fsdp_model_to_gpu
)


def _load_fsdp_model_to_device(model) -> None:
    """verl/utils/fsdp_utils.py, load_fsdp_model_to_gpu: for FSDP1 (verl's ``strategy: fsdp`` with
    ``param_offload``, the cluster's) it moves each flat parameter to ``f"{get_device_name()}:{get_device_id()}"``,
    which on the CPU platform (device ``cpu``, id ``torch.device("cpu")``) is the string "cpu:cpu", and torch
    refuses it. The move it makes is to the CPU, where the offloaded parameters already are: the same
    steps (FSDP's lazy init, each handle's flat parameter to the device) with the device named as torch
    names it. FSDP2 models go to verl's own function unchanged."""
    from torch.distributed.fsdp import FullyShardedDataParallel
    from torch.distributed.fsdp._runtime_utils import _lazy_init

    if fsdp_utils.fsdp_version(model) != 1:
        return ORIGINAL_LOAD_TO_DEVICE(model)
    assert isinstance(model, FullyShardedDataParallel)
    _lazy_init(model, model)
    for handle in model._all_handles:
        if not handle._offload_params:
            handle.flat_param_to(torch.device("cpu"), non_blocking=True)
            handle.flat_param._local_shard = handle.flat_param.data
    return None


_load_fsdp_model_to_device.__wrapped__ = ORIGINAL_LOAD_TO_DEVICE  # type: ignore[attr-defined]


def apply() -> None:
    """Idempotent; modules that imported the originals by name before this ran are patched too."""
    import sys

    distributed.initialize_global_process_group_ray = _init_process_group
    for name in ("verl.workers.engine_workers", "verl.checkpoint_engine.base"):
        module = sys.modules.get(name)
        if module is not None and hasattr(module, "initialize_global_process_group_ray"):
            # monkey-patches verl's module (its name, imported before this ran)
            module.initialize_global_process_group_ray = _init_process_group  # type: ignore[attr-defined]
    # monkey-patches verl's check (an lru_cache wrapper there) with a plain function
    monkey_patch.is_trl_available = _no_value_head_patch
    from torch.distributed.fsdp import _init_utils

    _init_utils._check_module_states_for_sync_module_states = _states_on_any_device
    fsdp_utils.load_fsdp_model_to_gpu = _load_fsdp_model_to_device
    module = sys.modules.get("verl.workers.engine.fsdp.transformer_impl")
    if module is not None:  # imported by name before this ran
        module.load_fsdp_model_to_gpu = _load_fsdp_model_to_device  # type: ignore[attr-defined]
