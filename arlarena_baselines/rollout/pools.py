"""The env pool of an ``--env-workers`` value: :func:`make_env_pool` (of :mod:`.envs` or
:mod:`.ray_pool`, imported only when asked for: it needs Ray)."""

from __future__ import annotations

from arlarena_baselines.rollout.envs import EnvFactory, EnvPool, InProcessEnvPool, ProcessEnvPool

__all__ = ["make_env_pool"]


def make_env_pool(factory: EnvFactory, num_envs: int, workers: int | str = 0) -> EnvPool:
    """``workers == 0``: an :class:`InProcessEnvPool`; ``N`` (or ``"N"``): a
    :class:`ProcessEnvPool` of N processes; ``"ray"`` or ``"ray:N"``: a
    :class:`~arlarena_baselines.rollout.ray_pool.RayEnvPool` (one actor per CPU of the Ray
    cluster, or N actors)."""
    text = str(workers)
    if not text.isdigit():
        name, _, count = text.partition(":")
        if name != "ray" or (count and not count.isdigit()):
            raise ValueError(f"env workers must be an int >= 0, 'ray' or 'ray:N', got {text!r}")
        from arlarena_baselines.rollout.ray_pool import RayEnvPool

        return RayEnvPool(factory, num_envs, int(count) if count else None)
    if int(text) == 0:
        return InProcessEnvPool(factory, num_envs)
    return ProcessEnvPool(factory, num_envs, int(text))
