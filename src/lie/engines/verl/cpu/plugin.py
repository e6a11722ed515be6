"""What ``VERL_USE_EXTERNAL_MODULES=lie.engines.verl.cpu.plugin`` loads in every verl process on a CPU.

Importing it registers the CPU platform, verl's FSDP engines for device ``cpu``, the
sample-tagging agent loop, the transformers rollout and, for rollout ``vllm``, loaders of verl's vLLM
rollout on vLLM's CPU build (``vllm_registry``; vLLM itself is imported only where a run uses it) (each module registers itself on import,
the idiom of verl's own registries, so that a Ray worker that imports one of them first still gets
all), and applies the two patches of ``patches.py``. ``lie train`` sets that variable only when no
GPU is visible; on a GPU machine nothing of ``lie.engines.verl.cpu`` loads, and importing this
module there is refused.
"""

from __future__ import annotations

import torch

if torch.cuda.is_available():
    raise RuntimeError(
        "lie.engines.verl.cpu is verl's CPU backend (tests, make smoke); a GPU is visible here: "
        "unset VERL_USE_EXTERNAL_MODULES and VERL_PLATFORM to train on the GPUs"
    )

import importlib  # noqa: E402

# The platform first: verl's engine modules ask for the platform when they are imported.
for _module in ("platform", "engines", "agent_loop", "rollout", "vllm_registry"):
    importlib.import_module(f"lie.engines.verl.cpu.{_module}")
importlib.import_module("lie.engines.verl.cpu.patches").apply()
