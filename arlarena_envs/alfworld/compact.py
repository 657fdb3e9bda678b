"""``ARLArena/ALFWorld-Compact-v0``: ALFWorld for a CPU budget, with its games parted by content.

Holds :class:`CompactALFWorldEnv`, :data:`PARTS`, :data:`VALIDATION_BUCKETS`,
:func:`part_indices` and :func:`heldout_keys`.

The same games, engine, texts and rewards as ``ARLArena/ALFWorld-v0``; what differs:

* **turn cap 20** (the study's: 50), set at registration. The planner expert needs 4-10 steps
  (measured on 61 training games); 20 leaves a searching policy room while halving the cost
  of a failed episode.
* **parts of a split, apart by content.** ``reset(options={"part": ...})`` draws from a part:
  the training split has ``fit`` (the default: behaviour cloning and RL) and ``validation``
  (every choice: lr, steps, checkpoint); the two eval splits have ``all``, the held-out games.
  A training game whose content key (:func:`~arlarena_envs.alfworld.contentkey.content_key`:
  scene, layout and goal) is also an eval game's is in no part; the rest go to ``validation``
  when their key's hash falls in one bucket of :data:`VALIDATION_BUCKETS` (about 1 in 16),
  so games with the same content always share a part.
* **seeds walk the part.** ``reset(seed=s)`` plays the part's game ``s mod n`` in a fixed
  shuffled order (by content key), so ``n`` consecutive seeds play every game of the part once
  and a panel of ``k * n`` seeds plays each ``k`` times (several samples per game, pairable
  by game and seed). Without a seed the game is drawn with the env's RNG; ``options["index"]``
  still plays that game of the split directly.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from arlarena_envs.alfworld.contentkey import content_key
from arlarena_envs.alfworld.env import ALFWorldEnv
from arlarena_envs.alfworld.generator import SPLIT_SIZES, split_task_types
from arlarena_envs.alfworld.scenes import canonical_split

__all__ = ["PARTS", "VALIDATION_BUCKETS", "CompactALFWorldEnv", "heldout_keys", "part_indices"]

VALIDATION_BUCKETS = 16
"""A training game is a validation game when its content key's value mod this is 0."""

PARTS: dict[str, tuple[str, ...]] = {
    "train": ("fit", "validation"),
    "eval_in_distribution": ("all",),
    "eval_out_of_distribution": ("all",),
}
"""The parts of each split; the first is the default."""

_EVAL_SPLITS = ("eval_in_distribution", "eval_out_of_distribution")


@cache
def heldout_keys() -> frozenset[str]:
    """The content keys of every game of the two eval splits."""
    return frozenset(content_key(split, i) for split in _EVAL_SPLITS
                     for i in range(SPLIT_SIZES[split]))


@cache
def part_indices(split: str, part: str, task_type: str | None = None) -> tuple[int, ...]:
    """The game indices of ``split`` in ``part`` (of ``task_type`` only, if given), in the
    part's fixed order (by content key, then index)."""
    split = canonical_split(split)
    if part not in PARTS[split]:
        raise ValueError(f"split {split} has no part {part!r}; it has: {', '.join(PARTS[split])}")
    types = split_task_types(split)
    keyed = [(content_key(split, i), i) for i in range(SPLIT_SIZES[split])
             if task_type is None or types[i] == task_type]
    if split == "train":
        held = heldout_keys()
        want_validation = part == "validation"
        keyed = [(k, i) for k, i in keyed if k not in held
                 and (int(k, 16) % VALIDATION_BUCKETS == 0) == want_validation]
    if not keyed:
        raise ValueError(f"part {part} of {split} has no {task_type} game")
    return tuple(i for _, i in sorted(keyed))


class CompactALFWorldEnv(ALFWorldEnv):
    """ALFWorld with a 20-turn cap (from registration) and content-disjoint parts of its
    splits (module docs). ``options["part"]`` picks the part (default: ``fit`` on the training
    split, ``all`` on the eval splits); ``reset(seed=s)`` plays the part's game ``s mod n``.

    Example:
        >>> import gymnasium as gym, arlarena_envs
        >>> env = gym.make("ARLArena/ALFWorld-Compact-v0")
        >>> env.spec.max_episode_steps
        20
        >>> _, info = env.reset(seed=3, options={"split": "eval_out_of_distribution"})
        >>> info["game_index"] == part_indices("eval_out_of_distribution", "all")[3]
        True
    """

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        """Play the part's game ``seed mod n`` (or ``options['index']``; module docs)."""
        options = dict(options or {})
        split = canonical_split(options.get("split", self.split))
        part = options.pop("part", PARTS[split][0])
        if "index" not in options and options.get("source", self.source) == "generated":
            indices = part_indices(split, part, options.get("task_type", self.task_type))
            if seed is not None:
                index = indices[seed % len(indices)]
            else:
                index = indices[int(self.np_random.integers(len(indices)))]
            options.update(split=split, index=index, task_type=None)
        return super().reset(seed=seed, options=options)
