"""``ARLArena/Bandit-v0``: a toy text task where one well-formed answer is rewarded.

Holds :class:`~arlarena_envs.bandit.env.BanditEnv` (its prompt template ``bandit`` is in
:data:`wrappers.templates.TEMPLATES`, with the others). It is the smallest task a trainer can
learn: every method of the zoo must raise the probability of the rewarded response within a few
dozen steps (``tests/test_train_learning.py``).
"""

from arlarena_envs.bandit.env import ARMS, BanditEnv

__all__ = ["ARMS", "BanditEnv"]
