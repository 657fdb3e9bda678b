"""The text-env contract every ARLArena environment follows, and its one rule for text.

Holds:
    * :data:`TEXT_CHARSET` (:class:`TextCharset`) and :class:`TextSpace` / :func:`text_space`
      -- a ``gymnasium.spaces.Text`` over every character UTF-8 can encode except control
      characters (tab and newline excepted), because LLM observations and actions are free text:
      emoji, CJK outside the BMP, accents and maths symbols all belong.
    * :func:`clean_text` -- the one rule that makes any ``str`` a member of that space: line
      breaks ``\\r\\n`` and ``\\r`` become ``\\n``, lone surrogates U+FFFD (split pairs are joined,
      :func:`repair_surrogates`), other control characters (NUL, C0 but tab and newline, DEL, C1)
      the escape ``\\xNN``; with a limit, too long a text loses its middle. It lives in
      :mod:`arlarena_envs.text_rule` (standard library only, so that the TIR sandbox applies
      the same rule to everything it hands out) and is re-exported here.
    * Gymnasium's ``flatten``, ``unflatten`` and shared-memory read for :class:`TextSpace`,
      vectorised, the read a live view (:class:`SharedTexts`): what ``AsyncVectorEnv`` needs.
    * :class:`TextEnv` -- the base class: string observations and actions, an ``info`` dict with
      ``task``, ``admissible_actions``, ``won``, ``anchor`` (and ``action_is_valid`` after a step),
      and the :meth:`TextEnv.expert_action` hook privileged agents use. It is the env's text
      boundary: every subclass's ``step`` gets its action through :func:`coerce_action`, and
      what ``reset``, ``step`` and ``render`` return goes through :func:`clean_text`. It pickles
      as its spec and state (:mod:`arlarena_envs.snapshots`).
    * :func:`coerce_action` -- turns whatever a caller passes as an action into a bounded, clean
      ``str`` so that hostile input (bytes, huge strings, ``None``, NUL, lone surrogates) never
      raises inside an env.
"""

from __future__ import annotations

import copy
import functools
import operator
from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence, Set
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.spaces.space import Space
from gymnasium.spaces.utils import flatten, unflatten
from gymnasium.vector.utils import read_from_shared_memory

from arlarena_envs.snapshots import Episode, remake, snapshot
from arlarena_envs.text_rule import (
    MAX_OBS_CHARS,
    OUTSIDE,
    RANGES,
    clean_text,
    repair_surrogates,
)

__all__ = [
    "MAX_ACTION_CHARS",
    "MAX_OBS_CHARS",
    "TEXT_CHARSET",
    "SharedTexts",
    "TextCharset",
    "TextEnv",
    "TextSpace",
    "clean_text",
    "coerce_action",
    "repair_surrogates",
    "text_space",
]

MAX_ACTION_CHARS = 1_000_000
"""Actions longer than this are cut before parsing: no env needs more, and it bounds work."""

_LOWS = np.asarray([lo for lo, _ in RANGES])
_STARTS = tuple(np.cumsum([0] + [hi - lo + 1 for lo, hi in RANGES])[:-1].tolist())


class TextCharset(Set[str]):
    """The characters of :data:`TEXT_CHARSET`, defined by rule (1,112,001 code points).

    A ``Set`` that is never materialised: membership is one comparison, :meth:`index` and
    :meth:`at` number the characters in code-point order (what ``Text`` flattening and
    :class:`TextSpace` sampling need).
    """

    def __contains__(self, char: object) -> bool:
        return isinstance(char, str) and len(char) == 1 and OUTSIDE.match(char) is None

    def __len__(self) -> int:
        lo, hi = RANGES[-1]
        return _STARTS[-1] + hi - lo + 1

    def __iter__(self) -> Iterator[str]:
        for lo, hi in RANGES:
            yield from map(chr, range(lo, hi + 1))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TextCharset) or Set.__eq__(self, other)

    __hash__ = Set._hash

    def index(self, char: str) -> int:
        """The position of ``char`` in code-point order (``KeyError`` if it is not admitted)."""
        if char not in self:
            raise KeyError(char)
        code = ord(char)
        k = bisect_right([lo for lo, _ in RANGES], code) - 1
        return _STARTS[k] + code - RANGES[k][0]

    def at(self, positions: np.ndarray) -> np.ndarray:
        """The code points at ``positions`` (the inverse of :meth:`index`, vectorised)."""
        positions = np.asarray(positions, dtype=np.int64)
        k = np.searchsorted(_STARTS, positions, side="right") - 1
        return _LOWS[k] + positions - np.asarray(_STARTS)[k]

    def positions(self, text: str) -> np.ndarray:
        """The positions of ``text``'s characters (:meth:`index` for a whole string, vectorised;
        ``KeyError`` if one is not admitted)."""
        outside = OUTSIDE.search(text)
        if outside is not None:
            raise KeyError(outside.group())
        codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32).astype(np.int64)
        k = np.searchsorted(_LOWS, codes, side="right") - 1
        return np.asarray(_STARTS)[k] + codes - _LOWS[k]

    def text_at(self, positions: np.ndarray) -> str:
        """The string of the characters at ``positions``; positions past the set (Gymnasium's
        padding) are skipped."""
        positions = np.asarray(positions, dtype=np.int64)
        codes = self.at(positions[(positions >= 0) & (positions < len(self))])
        return codes.astype(np.uint32).tobytes().decode("utf-32-le")


class _CharacterList(Sequence[str]):
    """:data:`TEXT_CHARSET` in code-point order as a sequence that is never built: indexing is
    one lookup, where a tuple of it would hold a million strings."""

    def __len__(self) -> int:
        return len(TEXT_CHARSET)

    def __getitem__(self, position: Any) -> str:  # type: ignore[override]
        position = operator.index(position)
        if not -len(self) <= position < len(self):
            raise IndexError(position)
        return chr(int(TEXT_CHARSET.at([position % len(self)])[0]))

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """All the characters as one ``<U1`` array (4.4 MB; what ``Text``'s masked sampling
        draws from): the code points themselves are numpy's UCS-4 strings."""
        codes = TEXT_CHARSET.at(np.arange(len(self))).astype(np.uint32).view("<U1")
        return codes if dtype is None else codes.astype(dtype)


TEXT_CHARSET = TextCharset()
"""Every character an observation or action may hold (see :class:`TextCharset`)."""
_CHARACTER_LIST = _CharacterList()


class TextSpace(spaces.Text):
    """A ``Text`` space over :data:`TEXT_CHARSET`: free text as real models write it.

    It behaves as ``Text(max_length, min_length=..., charset=TEXT_CHARSET)`` would, without
    building Gymnasium's per-character tables for a million characters: ``contains`` is one
    regular-expression pass, ``sample`` draws code points uniformly from the admitted ranges,
    and ``character_list`` is a sequence computed on indexing. ``flatten`` and ``unflatten``
    have vectorised versions for it, and the async vector env's shared-memory read gives a live
    view (:class:`SharedTexts`), so ``AsyncVectorEnv`` with its defaults works on every env.
    """

    def __init__(
        self, max_length: int, *, min_length: int = 0, seed: int | np.random.Generator | None = None
    ) -> None:
        if not 0 <= min_length <= max_length:
            raise ValueError(f"need 0 <= min_length <= max_length, got {min_length}, {max_length}")
        self.min_length, self.max_length = int(min_length), int(max_length)
        Space.__init__(self, dtype=str, seed=seed)

    def contains(self, x: Any) -> bool:
        return (
            isinstance(x, str)
            and self.min_length <= len(x) <= self.max_length
            and OUTSIDE.search(x) is None
        )

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        """A random string; a ``(length, None)`` mask fixes its length (character masks work
        as in ``Text`` but build the million-entry character list)."""
        given = mask if mask is not None else probability
        if given is not None and given[1] is not None:
            return super().sample(mask, probability)
        length = None if given is None else given[0]
        if length is None:
            length = int(self.np_random.integers(self.min_length, self.max_length + 1))
        codes = TEXT_CHARSET.at(self.np_random.integers(len(TEXT_CHARSET), size=length))
        return "".join(map(chr, codes.tolist()))

    @property
    def character_set(self) -> TextCharset:  # type: ignore[override]
        return TEXT_CHARSET

    @property
    def character_list(self) -> Sequence[str]:  # type: ignore[override]
        return _CHARACTER_LIST

    def character_index(self, char: str) -> np.int32:
        return np.int32(TEXT_CHARSET.index(char))

    @property
    def characters(self) -> str:
        return TEXT_CHARSET.text_at(np.arange(len(TEXT_CHARSET)))

    def __repr__(self) -> str:
        return f"TextSpace({self.min_length}, {self.max_length}, charset=TEXT_CHARSET)"

    def __eq__(self, other: object, /) -> bool:
        return (
            isinstance(other, TextSpace)
            and (self.min_length, self.max_length) == (other.min_length, other.max_length)
        )


@flatten.register(TextSpace)
def _flatten_text(space: TextSpace, x: str) -> np.ndarray:
    """``Text``'s flattening (character positions padded with the set's size), vectorised."""
    flat = np.full(space.max_length, len(TEXT_CHARSET), dtype=np.int32)
    positions = TEXT_CHARSET.positions(x)
    flat[: len(positions)] = positions
    return flat


@unflatten.register(TextSpace)
def _unflatten_text(space: TextSpace, x: np.ndarray) -> str:
    return TEXT_CHARSET.text_at(x)


class SharedTexts(Sequence[str]):
    """The async vector env's text observations in its shared memory, decoded when read.

    ``AsyncVectorEnv`` reads its shared memory once, when it is made, and counts on the result
    being a view of it (numpy arrays are); a tuple of strings would hold the first values
    forever. This view decodes the current contents on indexing, and its deep copy (what the
    vector env returns with its default ``copy=True``) is a plain tuple of the strings.
    """

    def __init__(self, rows: np.ndarray) -> None:
        self._rows = rows

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, index: Any) -> str:  # type: ignore[override]
        return TEXT_CHARSET.text_at(self._rows[operator.index(index)])

    def __deepcopy__(self, memo: dict[int, Any]) -> tuple[str, ...]:
        return tuple(self)

    def __repr__(self) -> str:
        return f"SharedTexts({tuple(self)!r})"


@read_from_shared_memory.register(TextSpace)
def _read_text_from_shared_memory(space: TextSpace, shared_memory: Any, n: int = 1) -> SharedTexts:
    data = np.frombuffer(shared_memory.get_obj(), dtype=np.int32)
    return SharedTexts(data.reshape(n, space.max_length))


def text_space(max_length: int = MAX_OBS_CHARS) -> TextSpace:
    """A :class:`TextSpace` of up to ``max_length`` characters."""
    return TextSpace(max_length)


def _clean_value(value: Any) -> Any:
    """``value`` with every ``str`` in it (also inside lists, tuples and dicts) cleaned."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {key: _clean_value(item) for key, item in value.items()}
    if type(value) in (list, tuple):
        return type(value)(_clean_value(item) for item in value)
    return value


def coerce_action(action: Any) -> str:
    """Return ``action`` as a clean ``str`` of at most :data:`MAX_ACTION_CHARS` characters.

    A ``str`` goes through :func:`clean_text`. Anything else (``bytes``, an ``int``, ``None``)
    is outside the action space and becomes the empty action, which every env answers as an
    invalid turn (its penalty, the state unchanged; TIR Math: a reply with neither code nor an
    answer), never as the text it would print as (``b"up"`` is not ``up``). This is the one
    place envs turn untrusted input into text (:class:`TextEnv` applies it to every action
    before the env's ``step`` runs).
    """
    text = action if isinstance(action, str) else ""
    return clean_text(text[:MAX_ACTION_CHARS])[:MAX_ACTION_CHARS]


def _observation_out(env: TextEnv, obs: Any) -> Any:
    """An observation as it leaves the env: clean and within the observation space's length."""
    return clean_text(obs, env.observation_space.max_length) if isinstance(obs, str) else obs


def _guard_reset(reset: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(reset)
    def guarded(self: TextEnv, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        rng = copy.deepcopy(self.np_random)
        self._ended = None
        obs, info = reset(self, **kwargs)
        self._episode = Episode(rng, copy.deepcopy(kwargs))
        return _observation_out(self, obs), _clean_value(info)

    return guarded


def _guard_step(step: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(step)
    def guarded(self: TextEnv, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        if self._ended is not None:  # stepping after the end: the same on every env
            obs, terminated, truncated, info = self._ended
            return obs, 0.0, terminated, truncated, {**info, "action_is_valid": False}
        action = coerce_action(action)
        obs, reward, terminated, truncated, info = step(self, action)
        if self._episode is not None:
            self._episode.actions.append(action)
        obs, info = _observation_out(self, obs), _clean_value(info)
        if terminated or truncated:
            self._ended = (obs, bool(terminated), bool(truncated), info)
        return obs, reward, terminated, truncated, info

    return guarded


def _guard_render(render: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(render)
    def guarded(self: TextEnv) -> Any:
        frame = render(self)
        return clean_text(frame) if isinstance(frame, str) else frame

    return guarded


_BOUNDARY = {"reset": _guard_reset, "step": _guard_step, "render": _guard_render}
"""The env methods :class:`TextEnv` puts behind the text boundary, and how."""


class TextEnv(gym.Env[str, str]):
    """Base class of the ARLArena text environments.

    Subclasses set :attr:`prompt_template` (the name of their template in
    :mod:`wrappers.templates`), implement ``reset``/``step`` returning string observations, and
    build every ``info`` with :meth:`make_info` so the contract's keys are always there.

    The class is the envs' text boundary, so no env has to remember it: the ``reset``, ``step``
    and ``render`` a subclass defines are wrapped when the class is created. ``step`` receives
    its action through :func:`coerce_action` (an action that is no ``str`` is an invalid turn);
    a step after the env ended the episode (``terminated`` or ``truncated``) repeats that last
    observation with reward 0, ``action_is_valid`` False and the same flags, on every env; the
    observation leaves through :func:`clean_text`, cut to ``observation_space.max_length``, and
    so do every string of ``info`` and a text frame of ``render``. Whatever a model writes or a
    program prints, the observation is then a member of ``observation_space`` and every string
    encodes as UTF-8.

    An env pickles and deep-copies as its spec and state (:mod:`arlarena_envs.snapshots`): the
    arguments it was constructed with, its last reset and the actions since. Loading
    constructs it again, so live resources (a sandbox pool, a Flask app, a planner) are
    rebuilt, not copied, and replays the episode: the copy's next observation is the
    original's. A subclass whose steps should not be replayed overrides :meth:`_progress`.
    """

    _episode: Episode | None = None
    """The current episode's reset and actions (set by ``reset``, grown by ``step``)."""
    _ended: tuple[Any, bool, bool, dict[str, Any]] | None = None
    """The last step of an episode the env ended (its observation, flags and info), which
    every later step repeats with reward 0 and ``action_is_valid`` False until ``reset``."""

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"], "render_fps": 4}
    prompt_template: ClassVar[str] = ""
    """Name of the template in :data:`wrappers.templates.TEMPLATES` used by ``PromptWrapper``."""
    lowercase_actions: ClassVar[bool] = True
    """Whether the strict format check lower-cases the extracted action (not for WebShop)."""

    observation_space = text_space()
    action_space = text_space(MAX_ACTION_CHARS)

    def __new__(cls, *args: Any, **kwargs: Any) -> TextEnv:
        env = super().__new__(cls)
        env._init_args = (args, kwargs)  # what :meth:`__reduce__` re-makes the env from
        return env

    def __reduce__(self) -> tuple[Any, ...]:
        return remake, (type(self), *self._init_args, snapshot(self))

    def _progress(self) -> Any:
        """The episode's state to restore in place of replaying its actions; ``None`` (the
        default): replay them. For envs whose steps are costly or not repeatable."""
        return None

    def _resume(self, progress: Any) -> None:
        """Restore what :meth:`_progress` saved, just after the episode's reset was replayed."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name, guard in _BOUNDARY.items():
            if name in cls.__dict__:
                setattr(cls, name, guard(cls.__dict__[name]))

    @staticmethod
    def make_info(
        *,
        task: str,
        admissible_actions: list[str],
        won: bool,
        anchor: str,
        action_is_valid: bool | None = None,
        **extra: Any,
    ) -> dict[str, Any]:
        """Build an ``info`` dict with the contract's keys (``action_is_valid`` after a step)."""
        info: dict[str, Any] = {
            "task": task,
            "admissible_actions": list(admissible_actions),
            "won": bool(won),
            "anchor": anchor,
        }
        if action_is_valid is not None:
            info["action_is_valid"] = bool(action_is_valid)
        info.update(extra)
        return info

    def scorer(self) -> dict[str, Any]:
        """What decides this env's scores beyond its constructor arguments (a library it found,
        an environment variable, a data folder), as plain JSON: results keep it in their
        settings record, so runs scored differently never merge. Default: nothing."""
        return {}

    def expert_action(self) -> str | None:
        """The raw action an expert would take now, or ``None`` if the env has no expert.

        Privileged: it reads the true state. Only the expert agent and tests call it.
        """
        return None
