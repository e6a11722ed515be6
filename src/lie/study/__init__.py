"""The CPU study of the Shallow Exploration Trap (``make study``, docs/study.md; registrations in docs/study/).

Conditions (trap strengths), each read from one or more supervised models (the pipeline's supervised stage,
``lie.stages.sft``), arms of RL on TRL with several seeds each, evaluated at several test-time budgets.
All of the study's code is here; nothing of the reproduction imports it (``lie.cli`` registers its
commands, the Snakefile includes its rules, ``workflow/rules/study.smk``). It uses the pipeline: its
data (``lie data`` on the synthetic tasks of ``lie.tasks``), supervised models (``lie base-model``),
sampling (``lie.stages.generate``), grading (``lie evaluate``) and runs (``lie train``).

Its commands and stages, which sample and write:

- :mod:`lie.study.commands`: ``lie study-probe``, ``study-responses``, ``study-gates``, ``study-report``;
- :mod:`lie.study.stages`: the probe (``probe``: it samples) and the steps after it (``steps``).

The modules that measure and report, from files only (no engine, no stage):

- :mod:`lie.study.spec`: the ``study:`` section, checked against the rest of the config;
- :mod:`lie.study.paths`: where the study's files are, and what its rules read and write;
- :mod:`lie.study.numerics`: the floating-point kernels every job of a study is pinned to;
- :mod:`lie.study.trap`: the trap index, analytic (from the stop probability) and counted on groups;
- :mod:`lie.study.gates`: the pre-registered gates on the probed supervised models (before any RL run);
- :mod:`lie.study.responses`: per-response columns of every evaluation (depth, n-gram states, grades);
- :mod:`lie.study.inputs`: per-step curves from the rollouts, per-condition summaries of responses;
- :mod:`lie.study.paired`: paired differences by seed, intervals and the first registration's verdicts;
- :mod:`lie.study.stats`, :mod:`lie.study.registered`: the second registration's tests (one-sided paired
  t-test, smallest detectable effect, interaction, slope) and its persistence check;
- :mod:`lie.study.decision`: the third registration's rule (supported / refuted at the smallest effect of
  interest / inconclusive), its binding check, per-model means and the gates' confidence bounds;
- :mod:`lie.study.data`: a finished study's files read once (``StudyData``), which the figures
  (:mod:`lie.study.figures`) and the tables (:mod:`lie.study.report`, ``lie study-report``) draw from.
"""
