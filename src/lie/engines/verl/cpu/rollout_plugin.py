"""What ``VERL_USE_EXTERNAL_MODULES=lie.engines.verl.cpu.rollout_plugin`` loads in every verl process of a
GPU run whose ``training.gpu_rollout`` is ``transformers``: the transformers rollout server (``rollout``)
and the sample-tagging agent loop (``agent_loop``), and nothing of the CPU platform, engines or patches,
so verl's FSDP workers run on the GPUs as on the cluster. The server itself samples on the CPU (a Ray
actor that asks for no GPU): a check of verl's GPU path where vLLM is not installed, with a tiny model.
Unlike ``plugin``, importing it where a GPU is visible is what it is for.
"""

from __future__ import annotations

import importlib

for _module in ("agent_loop", "rollout"):
    importlib.import_module(f"lie.engines.verl.cpu.{_module}")
