"""verl's own FSDP engines, registered for device ``cpu`` through verl's ``EngineRegistry`` on import.

verl registers them for ``cuda`` and ``npu`` only (verl/workers/engine/fsdp/transformer_impl.py,
the ``@EngineRegistry.register`` lines above ``FSDPEngineWithLMHead`` and
``FSDPEngineWithValueHead``); the engines themselves run on gloo and CPU tensors unchanged.
"""

from __future__ import annotations

from verl.workers.engine.base import EngineRegistry
from verl.workers.engine.fsdp.transformer_impl import FSDPEngineWithLMHead, FSDPEngineWithValueHead

BACKENDS = ["fsdp", "fsdp2"]


def register() -> None:
    """Idempotent: a Ray worker may import this module again after a failed first attempt."""
    for model_type, engine in (
        ("language_model", FSDPEngineWithLMHead),
        ("value_model", FSDPEngineWithValueHead),
    ):
        for backend in BACKENDS:
            if "cpu" not in EngineRegistry._engines.get(model_type, {}).get(backend, {}):
                EngineRegistry.register(model_type=model_type, backend=backend, device="cpu")(engine)


register()
