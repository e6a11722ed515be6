"""TRL 1.16 (``GRPOTrainer``): a run of config.yaml on a CPU or one GPU (``train``)."""
