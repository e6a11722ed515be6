"""Synthetic tasks written by the project (no fetched data): the smoke run's data and the CPU study."""
