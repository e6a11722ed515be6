"""verl 0.9.1: the recipe (``lie_trainer.yaml``, an overlay on verl's ``ppo_trainer``), a run's own
values mapped onto it (``overrides``), the reward manager verl loads (``reward_manager``), the
checkpoint repairs before a relaunch (``checkpoints``), and the CPU backend (``cpu``)."""
