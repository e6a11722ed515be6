"""The CPU study of the Shallow Exploration Trap (``make study``, docs/study.md; registrations in docs/study/).

Conditions (trap strengths), each read from one or more supervised models (``lie.stages.sft``), arms of
RL on TRL with several seeds each, evaluated at several test-time budgets. This package measures
and reports, from files only:

- :mod:`lie.study.spec`: the ``study:`` section, checked against the rest of the config;
- :mod:`lie.study.trap`: the trap index, analytic (from the stop probability) and counted on groups;
- :mod:`lie.stages.probe` (a stage: it samples), :mod:`lie.study.gates`: the supervised models sampled as the rollouts
  sample, and the pre-registered gates on them (before any RL run);
- :mod:`lie.study.responses`: per-response columns of every evaluation (depth, n-gram states, grades);
- :mod:`lie.study.inputs`: per-step curves from the rollouts, per-condition summaries of responses;
- :mod:`lie.study.paired`: paired differences by seed, intervals and the first registration's verdicts;
- :mod:`lie.study.stats`, :mod:`lie.study.registered`: the second registration's tests (one-sided paired
  t-test, smallest detectable effect, interaction, slope) and its persistence check;
- :mod:`lie.study.decision`: the third registration's rule (supported / refuted at the smallest effect of
  interest / inconclusive), its binding check, per-model means and the gates' confidence bounds;
- :mod:`lie.study.report`, :mod:`lie.study.figures`: tables and figures (``lie study-report``, through
  ``lie.stages.study``).
"""
