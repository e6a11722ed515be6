"""Thin adapters over real libraries, each behind one small interface (DESIGN.md, layer 3).

Generation: :mod:`lie.engines.generation` (vLLM on GPU, transformers ``generate`` on CPU).
Training: verl 0.9 (GPU, Ray, multi-node) and TRL (CPU or one GPU); both call :mod:`lie.reward`.
"""
