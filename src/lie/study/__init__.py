"""The CPU study of the Shallow Exploration Trap (``make study``, docs/study.md).

A tiny policy taught to stop early (``lie.sft``), three RL arms on TRL with several seeds each,
evaluated at several test-time budgets; this package turns the files those stages wrote into
the study's figures and tables, from files only (``lie study-report --config CONFIG``):

- :mod:`lie.study.spec`: the ``study:`` section, checked against the rest of the config;
- :mod:`lie.study.inputs`: per-step curves from the rollouts, accuracy per budget from the
  evaluation summaries, per-response statistics of the generations;
- :mod:`lie.study.report`: aggregation over seeds (mean, min, max), figures and tables.
"""
