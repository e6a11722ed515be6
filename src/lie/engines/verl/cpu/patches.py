"""The two places where verl 0.9.1 cannot run on a CPU as it is; each patch names the line it works around.

tests/test_verl_cpu.py runs verl's unpatched code for each and fails once verl (or TRL) fixes
it, so that the patch is removed then.
"""

from __future__ import annotations

import verl.models.transformers.monkey_patch as monkey_patch
import verl.utils.distributed as distributed

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
