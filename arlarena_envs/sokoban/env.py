"""``ARLArena/Sokoban-v0`` and its size/box variants: Sokoban as a text environment."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from arlarena_envs.base import TextEnv, coerce_action
from arlarena_envs.sokoban.levels import GENERATORS, Level, LevelGenerationError, generate_level
from arlarena_envs.sokoban.render import grid_rgb, grid_text
from arlarena_envs.sokoban.rules import ACTIONS, move
from arlarena_envs.sokoban.solver import solve
from arlarena_envs.sokoban.split import SPLITS, in_split

__all__ = ["SokobanEnv"]

TASK = "Push all the boxes onto the target spots."


class SokobanEnv(TextEnv):
    """Sokoban with text observations and the study's levels and rewards.

    Levels come from a reverse-play generator of :data:`~arlarena_envs.sokoban.levels.GENERATORS`
    (``generator``: the study's by default, ``"gym_sokoban"`` for gym-sokoban's as shipped).
    ``reset(seed=s)`` shows the level the original generator makes for seed ``s``; a draw that
    fails, or whose level the BFS solver cannot solve within ``max_solution_length`` moves, is
    redrawn with a seed from the env's RNG (no 6×6 one-box level of seeds 0..299 needs more
    than 11 moves, ``bench/sokoban.py``, so the default keeps the study's levels). The reset
    option (or constructor argument) ``split`` restricts the levels by content
    (:mod:`~arlarena_envs.sokoban.split`): ``"train"`` redraws held-out levels, ``"eval"`` shows
    only held-out ones, ``"all"`` (the default) any level. Rewards follow
    gym-sokoban and the study's runs: −0.1 per turn, +1 / −1 for a box pushed onto / off a
    target, +10 when every box is on a target. An action that is not one of
    ``up``/``down``/``left``/``right`` (after stripping and lower-casing) leaves the state as it
    is, costs the turn's −0.1, and sets ``info["action_is_valid"] = False``.

    After the episode is won, stepping on is outside Gymnasium's contract; like every ARLArena
    env (:class:`~arlarena_envs.base.TextEnv`) this one repeats the won state
    (``terminated=True``) with reward 0 for any action, where the study's env answers an invalid
    action with ``done=False`` and ``won=False``. Its rollouts never step a finished episode, so
    the difference never shows in a run.

    Example:
        >>> import gymnasium as gym, arlarena_envs
        >>> env = gym.make("ARLArena/Sokoban-v0")
        >>> obs, info = env.reset(seed=0)
        >>> info["admissible_actions"]
        ['up', 'down', 'left', 'right']
        >>> obs == info["anchor"]
        True
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}
    prompt_template = "sokoban"

    def __init__(
        self,
        dim: tuple[int, int] = (6, 6),
        num_boxes: int = 1,
        max_solution_length: int = 15,
        num_gen_steps: int | None = None,
        generator: str = "study",
        visual: bool = False,
        render_mode: str | None = None,
        max_level_draws: int = 1000,
        split: str = "all",
    ) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']}")
        if num_boxes < 1 or min(dim) < 4:
            raise ValueError(f"need at least one box and a 4x4 room, got {dim} with {num_boxes}")
        if split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
        if generator not in GENERATORS:
            raise ValueError(f"generator must be one of {sorted(GENERATORS)}, got {generator!r}")
        self.dim = (int(dim[0]), int(dim[1]))
        self.num_boxes = int(num_boxes)
        self.max_solution_length = int(max_solution_length)
        self.num_gen_steps = num_gen_steps
        self.generator = generator
        self.visual = bool(visual)
        self.prompt_template = "sokoban_visual" if self.visual else "sokoban"
        self.render_mode = render_mode or ("rgb_array" if self.visual else None)
        self.max_level_draws = int(max_level_draws)
        self.split = split
        self._level: Level | None = None
        self._player: tuple[int, int] = (0, 0)
        self._boxes: frozenset[tuple[int, int]] = frozenset()
        self._plan: list[str] = []
        self._plan_state: tuple | None = None

    # -- state helpers -------------------------------------------------------------------------
    @property
    def level(self) -> Level:
        """The level of the current episode (``reset`` must have been called)."""
        if self._level is None:
            raise RuntimeError("call reset() before using the environment")
        return self._level

    @property
    def _targets(self) -> frozenset[tuple[int, int]]:
        return frozenset(self.level.targets)

    def _on_target(self) -> int:
        return len(self._boxes & self._targets)

    def _grid(self) -> str:
        return grid_text(self.level.walls, self._targets, self._player, self._boxes)

    def _info(self, action_is_valid: bool | None = None) -> dict[str, Any]:
        grid = self._grid()
        return self.make_info(
            task=TASK,
            admissible_actions=list(ACTIONS),
            won=self._boxes == self._targets,
            anchor=grid,
            action_is_valid=action_is_valid,
            boxes_on_target=self._on_target(),
            num_boxes=self.num_boxes,
        )

    # -- gymnasium API -------------------------------------------------------------------------
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        """Draw a new level of the split: the original's level of ``seed``, else one from the
        env's RNG."""
        super().reset(seed=seed, options=options)
        split = (options or {}).get("split", self.split)
        if split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
        for draw in range(self.max_level_draws):
            level_seed = seed if seed is not None and draw == 0 else self.np_random.integers(2**32)
            try:
                level = generate_level(
                    int(level_seed), self.dim, self.num_boxes,
                    generator=self.generator, num_steps=self.num_gen_steps,
                )
            except LevelGenerationError:
                continue
            if not in_split(level, split):
                continue
            plan = solve(
                level.walls, level.targets, level.player, level.boxes,
                max_depth=self.max_solution_length,
            )
            if plan:
                break
        else:
            raise LevelGenerationError(
                f"no {self.dim} {self.generator} {split} level with {self.num_boxes} boxes "
                f"solvable in {self.max_solution_length} moves after {self.max_level_draws} draws"
            )
        self._level, self._plan = level, plan
        self._player, self._boxes = level.player, frozenset(level.boxes)
        self._plan_state = (self._player, self._boxes)
        return self._grid(), self._info()

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Move the player; invalid text leaves the state unchanged (see the class docs)."""
        name = coerce_action(action).strip().lower()
        reward = -0.1
        valid = name in ACTIONS
        if valid:
            before = self._on_target()
            self._player, self._boxes, _ = move(self.level.walls, self._player, self._boxes, name)
            reward += self._on_target() - before
        won = self._boxes == self._targets
        if won and valid:
            reward += 10.0
        return self._grid(), float(reward), won, False, self._info(action_is_valid=valid)

    def render(self) -> np.ndarray | str | None:
        if self.render_mode == "rgb_array":
            return grid_rgb(self.level.walls, self._targets, self._player, self._boxes)
        if self.render_mode == "ansi":
            return self._grid()
        return None

    def shortest_solution(self) -> list[str] | None:
        """A shortest list of moves that wins from the current state (``None``: deadlocked)."""
        return solve(self.level.walls, self._targets, self._player, self._boxes)

    def expert_action(self) -> str | None:
        """Next move of a shortest plan from the current state (re-planned if it drifted)."""
        state = (self._player, self._boxes)
        if self._plan_state != state or not self._plan:
            self._plan = self.shortest_solution() or []
        if not self._plan:
            return None
        action = self._plan.pop(0)
        player, boxes, _ = move(self.level.walls, self._player, self._boxes, action)
        self._plan_state = (player, boxes)
        return action
