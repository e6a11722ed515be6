"""Exploration analyses of the paper's claims, from files only (rollouts, metrics, generations).

- :mod:`lie.analysis.diversity`: n-gram diversity across a prompt's group of samples;
- :mod:`lie.analysis.dynamics`: per-step training curves of every run (either engine);
- :mod:`lie.analysis.behaviours`: reasoning behaviours (backtracking, verification, subgoal
  setting, enumeration) counted by readable patterns, or by a judge model.
"""
