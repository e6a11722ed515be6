"""Thin adapters over real libraries, each behind one small interface (DESIGN.md, layer 3).

Generation: :mod:`lie.engines.generation` (vLLM on GPU, transformers ``generate`` on CPU).
Training: verl 0.9 (GPU, Ray, multi-node) and TRL (CPU or one GPU); both call :mod:`lie.reward`.
"""

from pathlib import Path


def verl_reward_path() -> str:
    """Absolute path of the verl reward-manager module (verl loads it by file path)."""
    return str(Path(__file__).with_name("verl_reward.py").resolve())
