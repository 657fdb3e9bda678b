"""``ARLArena/ALFWorld-v0``: ALFWorld's household text games, with TextWorld's transcripts.

Holds :class:`ALFWorldEnv`, :data:`NOTHING_HAPPENS` and :data:`WIN_REWARD`. Games come from
ARLArena's offline generator by default (see :mod:`arlarena_envs.alfworld.generator`) or, with
``source="alfworld_data"``, from the original ALFWorld data a user downloaded. Generated games
are played by the native engine (:mod:`arlarena_envs.alfworld.native`) unless
``engine="textworld"``; the original games always by TextWorld
(:mod:`arlarena_envs.alfworld.engines`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

from arlarena_envs.alfworld.catalog import (
    SOURCES,
    ALFWorldDataGames,
    GameRef,
    GeneratedGames,
    make_source,
)
from arlarena_envs.alfworld.engines import ENGINES, Engine, make_engine
from arlarena_envs.alfworld.native import Turn
from arlarena_envs.alfworld.planner import RelevantPlanner
from arlarena_envs.alfworld.scenes import canonical_split
from arlarena_envs.base import TextEnv, coerce_action

__all__ = ["NOTHING_HAPPENS", "WIN_REWARD", "ALFWorldEnv"]

NOTHING_HAPPENS = "Nothing happens."
"""ALFWorld's reply to a command that is not admissible (the state does not change)."""

WIN_REWARD = 10.0
"""Reward on the step that completes the task (the study's 10 × won)."""

_TASK_PREFIX = "Your task is to: "
_MAX_COMMAND_CHARS = 300
# Commands that never change what the goal depends on (the expert's plan survives them).
_OBSERVING = ("look", "inventory", "examine", "help")


class ALFWorldEnv(TextEnv):
    """ALFWorld's text game: its PDDL domain, grammar, ``AlfredDemangler`` names and texts.

    Each episode plays one ``game.tw-pddl``. The observation is TextWorld's text (the
    ``-= Welcome to TextWorld, ALFRED! =-`` intro with the task line at reset, the game's reply
    after a step); ``info["admissible_actions"]`` is TextWorld's sorted admissible command list
    without ``help``, as the agent codebases show it. A command that is not admissible (after
    trimming, collapsing spaces and lower-casing) is not played: the state stays, the reply is
    ``Nothing happens.`` and ``info["action_is_valid"]`` is False. Winning (TextWorld's ``won``)
    ends the episode with reward ``10``; every other step gives 0. The turn limit (50) comes
    from registration.

    Generated games run on the native engine by default (``engine="native"``): the same
    observations, admissible commands, ``won`` and info as TextWorld, byte for byte (checked by
    ``tests/test_alfworld_native.py``), at ~1 ms a step. ``engine="textworld"`` plays them on
    TextWorld itself (ALFWorld's ``AlfredDemangler(shuffle=False)`` and ``AlfredInfos``
    wrappers), the reference; the original ALFWorld games (``source="alfworld_data"``) always
    run on TextWorld. ``info["engine"]`` says which one played. Resetting the game already
    loaded costs a fraction of a millisecond on the native engine; a game is compiled once per
    process (~10 ms).

    The env is safe to construct, reset and step from several threads, each env in its own:
    the native engine shares nothing mutable, and every call into TextWorld or Fast Downward is
    serialised (:data:`~arlarena_envs.alfworld.translation.TEXTWORLD_LOCK`).

    Pickling or deep-copying the env (:mod:`arlarena_envs.snapshots`) carries its settings,
    reset and commands, not its engines or planner (TextWorld, Fast Downward's library): the
    copy loads the game again (from the cache, or generating it) and replays the commands.

    ``reset(seed=...)`` draws a game of the split with the env's RNG; ``options`` may set
    ``split`` (``train``, ``eval_in_distribution``, ``eval_out_of_distribution``; also
    ``eval`` / ``valid_seen`` and ``valid_unseen``, ALFWorld's names), ``index`` (a
    game of the split, or of ``task_type`` if that is set too), ``task_type`` (one of ALFWorld's
    six) and ``source`` (``generated`` or ``alfworld_data``).

    Args:
        split: default split.
        source: ``generated`` (ARLArena's offline games, cached under ``cache_dir``) or
            ``alfworld_data`` (the original games under ``data_dir`` / ``$ALFWORLD_DATA``).
        task_type: restrict draws to one task type (default: all six).
        data_dir: root of the downloaded ALFWorld data.
        cache_dir: root of the generated-game cache (default ``$ARLARENA_CACHE/alfworld``).
        engine: ``native`` (default) or ``textworld``, for generated games.
        render_mode: ``None`` or ``"ansi"`` (the current observation).

    Example:
        >>> import gymnasium as gym, arlarena_envs
        >>> env = gym.make("ARLArena/ALFWorld-v0")
        >>> obs, info = env.reset(seed=0, options={"split": "eval_out_of_distribution", "index": 0})
        >>> obs.startswith("-= Welcome to TextWorld, ALFRED! =-"), info["engine"]
        (True, 'native')
        >>> "help" in info["admissible_actions"]
        False
        >>> _, reward, terminated, _, info = env.step("dance")
        >>> reward, terminated, info["action_is_valid"]
        (0.0, False, False)
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"], "render_fps": 4}
    prompt_template = "alfworld"

    def __init__(
        self,
        split: str = "train",
        source: str = "generated",
        task_type: str | None = None,
        data_dir: str | Path | None = None,
        cache_dir: str | Path | None = None,
        engine: str = "native",
        render_mode: str | None = None,
    ) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']}")
        split = canonical_split(split)
        if source not in SOURCES:
            raise ValueError(f"unknown source {source!r}; known: {', '.join(SOURCES)}")
        if engine not in ENGINES:
            raise ValueError(f"unknown engine {engine!r}; known: {', '.join(ENGINES)}")
        self.split, self.source, self.task_type = split, source, task_type
        self.engine = engine
        self._game_source = source
        self.data_dir, self.cache_dir = data_dir, cache_dir
        self.render_mode = render_mode
        self._sources: dict[str, GeneratedGames | ALFWorldDataGames] = {}
        self._engines: dict[str, Engine] = {}
        self._engine_name = engine
        self._game: GameRef | None = None
        self._obs = ""
        self._task = ""
        self._won = False
        self._started = False
        self._admissible: list[str] = []
        self._planner: RelevantPlanner | None = None
        self._planner_game: Path | None = None
        self._plan: list[str] | None = None

    # -- games ---------------------------------------------------------------------------------
    def games(self, source: str | None = None) -> GeneratedGames | ALFWorldDataGames:
        """The game source ``source`` (default: the env's), built on first use."""
        name = source or self.source
        if name not in self._sources:
            self._sources[name] = make_source(
                name, data_dir=self.data_dir, cache_dir=self.cache_dir
            )
        return self._sources[name]

    @property
    def game(self) -> GameRef:
        """The game of the current episode (``reset`` must have been called)."""
        if self._game is None:
            raise RuntimeError("call reset() before using the environment")
        return self._game

    def engine_for(self, source: str) -> str:
        """The engine that plays games of ``source`` (the original games: TextWorld)."""
        return "textworld" if source == "alfworld_data" else self.engine

    def _engine(self) -> Engine:
        name = self._engine_name
        if name not in self._engines:
            self._engines[name] = make_engine(name)
        return self._engines[name]

    def _set_turn(self, turn: Turn) -> None:
        self._obs, self._won = turn.feedback, turn.won
        self._admissible = [c for c in turn.admissible_commands if c != "help"]

    def _info(self, action_is_valid: bool | None = None) -> dict[str, Any]:
        game = self.game
        return self.make_info(
            task=self._task,
            admissible_actions=self._admissible,
            won=self._won,
            anchor=self._obs,
            action_is_valid=action_is_valid,
            task_type=game.task_type,
            split=game.split,
            game_index=game.index,
            gamefile=str(game.path),
            source=self._game_source,
            engine=self._engine_name,
        )

    # -- gymnasium API -------------------------------------------------------------------------
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        """Load a game: ``options['index']`` if given, else one drawn with the env's RNG."""
        super().reset(seed=seed, options=options)
        options = dict(options or {})
        split = canonical_split(options.get("split", self.split))
        task_type = options.get("task_type", self.task_type)
        source = options.get("source", self.source)
        games = self.games(source)
        if "index" in options:
            index = int(options["index"])
        else:
            index = int(self.np_random.integers(games.count(split, task_type)))
        game = games.get(split, index, task_type)
        self._engine_name = self.engine_for(source)
        engine = self._engine()
        self._started = False
        try:
            engine.load(game.path)
            turn = engine.reset()
        except Exception as exc:  # TextWorld/Fast Downward errors name nothing useful alone
            engine.close()
            self._engines.pop(self._engine_name, None)
            self._game = None
            raise RuntimeError(
                f"{self._engine_name} could not load {game.path}: {exc!r}") from exc
        self._game, self._game_source, self._started = game, source, True
        self._set_turn(turn)
        self._task = self._obs.rpartition(_TASK_PREFIX)[2].strip()
        self._plan = None
        return self._obs, self._info()

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Run an admissible command; anything else leaves the state as it is (class docs)."""
        if not self._started:
            raise RuntimeError("call reset() before step()")
        text = coerce_action(action)
        command = " ".join(text.split()).lower() if len(text) <= _MAX_COMMAND_CHARS else ""
        valid = not self._won and command in self._admissible
        reward = 0.0
        if valid:
            self._track_plan(command)
            self._set_turn(self._engine().step(command))
            reward = WIN_REWARD if self._won else 0.0
        else:
            self._obs = NOTHING_HAPPENS
        return self._obs, reward, self._won, False, self._info(action_is_valid=valid)

    def render(self) -> str | None:
        return self._obs if self.render_mode == "ansi" else None

    def close(self) -> None:
        for engine in self._engines.values():
            engine.close()
        self._engines.clear()
        self._started = False
        super().close()

    # -- expert --------------------------------------------------------------------------------
    def _track_plan(self, command: str) -> None:
        """Keep the cached plan if ``command`` is its next step (or only observes), else drop it."""
        if not self._plan:
            return
        if self._engine().operator_of(command) == self._plan[0]:
            self._plan.pop(0)
        elif not command.startswith(_OBSERVING):
            self._plan = None

    def expert_action(self) -> str | None:
        """Next command of an optimal plan from the current state (ALFWorld's planner).

        Fast Downward, as TextWorld runs it, solves the game's own PDDL restricted to what the
        goal involves (see :mod:`arlarena_envs.alfworld.planner`), from the engine's facts in
        sorted order, so both engines get the same plan; the plan is cached and recomputed when
        the episode leaves it. Returns ``None`` once the task is done (or if no plan exists).
        """
        if not self._started or self._won:
            return None
        path = self.game.path
        if self._planner is None or self._planner_game != path:  # built on first use
            data = json.loads(Path(path).read_text(encoding="utf-8"))
            self._planner = RelevantPlanner(data["pddl_domain"], data["pddl_problem"])
            self._planner_game = path
        engine = self._engine()
        for _ in range(2):
            if self._plan is None:
                self._plan = self._planner.plan(engine.facts()) or []
            if not self._plan:
                return None
            command = engine.command_of(self._plan[0])
            if command in self._admissible:
                return command
            self._plan = None
        return None
