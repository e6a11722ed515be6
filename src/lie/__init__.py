"""LIE (Length-Incentivized Exploration): the reference reproduction pipeline.

Layers, dependencies pointing down only: ``lie.core.reward`` / ``lie.core.ngrams`` (core) <- grading <-
engines (verl, TRL, vLLM, transformers) <- pipeline (Snakemake rules calling the ``lie`` CLI).
"""

__version__ = "0.1.0"
