"""The supervised model sampled as RL will sample it: the gates' measurements before any RL run.

``lie study-probe`` runs ``lie generate``'s code on the study's benchmark with the rollout settings
of ``training:`` (temperature, top_p, ``max_response_length`` tokens) and ``study.probe.n`` samples
per problem (GRPO's group size), so that the share of problems whose samples all get the same grade
is the trap index RL starts from. The pipeline's ``lie evaluate`` then grades the lines as usual.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from lie.core.errors import LieError
from lie.study.spec import study_spec


def probe_config(config: dict[str, Any]) -> dict[str, Any]:
    """``config`` with the evaluation's sampling replaced by the rollouts' (temperature, top_p)."""
    training = config.get("training") or {}
    for key in ("temperature", "top_p", "max_response_length"):
        if training.get(key) is None:
            raise LieError(f"training.{key} is missing: the probe samples as the rollouts do")
    out = copy.deepcopy(config)
    out["evaluation"] = {**(config.get("evaluation") or {}), "temperature": training["temperature"]}
    out["evaluation"]["top_p"] = training["top_p"]
    return out


def run_probe(
    config: dict[str, Any], model: str, data: str | Path, out: str | Path, progress: bool = True
) -> dict[str, Any]:
    """Sample ``model`` on the study's benchmark as the rollouts do; write ``lie generate`` lines to ``out``."""
    from lie.stages.generate import run_generate

    spec = study_spec(config)
    return run_generate(
        probe_config(config),
        model,
        spec.bench,
        data,
        out,
        n=spec.probe_n,
        max_tokens=int(config["training"]["max_response_length"]),
        seed=spec.probe_seed,
        progress=progress,
    )
