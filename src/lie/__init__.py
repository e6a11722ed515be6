"""LIE (Length-Incentivized Exploration): the reference reproduction pipeline.

Layers, dependencies pointing one way (docs/architecture.md; tests/test_architecture.py holds the rule):
commands -> stages -> engines -> grading, formats, config -> core; stages also call analysis, report and
study, which read files and never reach an engine or a stage. The Snakemake rules call the ``lie`` CLI.
"""

__version__ = "0.1.0"
