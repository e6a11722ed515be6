"""Thin adapters over real libraries, each behind one small interface (docs/architecture.md: the engines layer).

Generation: :mod:`lie.engines.generation` (vLLM on GPU, transformers on CPU).
Training: verl 0.9 (:mod:`lie.engines.verl.overrides`, its reward manager :mod:`lie.engines.verl.reward_manager`,
its CPU backend :mod:`lie.engines.verl.cpu`) and TRL (:mod:`lie.engines.trl.train`); both call
:mod:`lie.core.reward` and grade through :class:`lie.grading.GradingExecutor`.
"""
