"""Bridges from ARLArena's envs to other trainers: :mod:`.trl` (TRL's ``GRPOTrainer``).

OpenRLHF has its own package, :mod:`arlarena_baselines.openrlhf`. Importing this package
imports no trainer.
"""
