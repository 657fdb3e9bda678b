"""Generate ALFWorld games offline, reproducibly, from the scenes and goals ``alfworld`` ships.

Holds :data:`TASK_TYPES` (ALFWorld's six, in its order), :data:`SPLIT_TASK_COUNTS`,
:data:`SPLIT_SIZES`, :data:`GENERATOR_VERSION`, :func:`split_task_types`, :func:`task_indices`,
:func:`candidate_game` (one sampling attempt), :func:`candidate_games`, :func:`sample_game`
(split + index → the :class:`~arlarena_envs.alfworld.problem.GameSpec` of the game), the expert
check
(:func:`handcoded_seed`, :func:`expert_solves`, :func:`expert_checked_attempt`,
:func:`checked_attempts`) and :func:`generated_game_path` (the game file in the cache, written
on first use).

A game is a real ALFRED floor plan (its receptacles and the object types of the room), objects
placed where ALFRED allows them (``VAL_RECEPTACLE_OBJECTS``; closed cabinets, drawers and fridges
included) and one goal drawn with ALFRED's sampling rules: the target object exists and can be
picked up, the parent receptacle type exists and may hold it, the appliance of clean/heat/cool
exists, a look task has a lamp that is off, and the goal does not hold at the start.

**Task mix.** Each split has exactly ALFWorld's games per task type (:data:`SPLIT_TASK_COUNTS`:
train 790/308/650/459/533/813, valid_seen 35/13/27/16/25/24, valid_unseen 24/18/31/23/21/17
for pick, look, clean, heat, cool, pick-two; ALFWorld's paper, Table 1), interleaved so that
every prefix of a split keeps those proportions to within one game per type.

**Checked by ALFWorld's expert.** As ALFWorld keeps only the games its hand-coded expert
solves, a sampling attempt becomes the game only if ``HandCodedTWAgent`` wins it
(:mod:`arlarena_envs.alfworld.handcoded`, seeded per attempt); otherwise the next attempt is
drawn. The verdicts are a pure function of the generator version, so they ship precomputed
(``data/handcoded_checked.json``, written by ``python bench/alfworld.py --write-checked``) and
are recomputed on the fly where that file does not cover a game.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections.abc import Iterator
from functools import cache, lru_cache
from pathlib import Path

from arlarena_envs.alfworld.problem import GameSpec, PlacedObject, game_dir_name, write_game
from arlarena_envs.alfworld.resources import cache_dir
from arlarena_envs.alfworld.scenes import (
    AFFORDANCES,
    ROOM_GOALS,
    SPLIT_SCENES,
    SPLITS,
    Receptacle,
    Scene,
    load_scene,
    location_id,
)
from arlarena_envs.alfworld.seeding import KeyedRandom

__all__ = [
    "GENERATOR_VERSION",
    "SPLIT_SIZES",
    "SPLIT_TASK_COUNTS",
    "TASK_TYPES",
    "GameGenerationError",
    "candidate_game",
    "candidate_games",
    "checked_attempts",
    "expert_checked_attempt",
    "expert_solves",
    "generated_game_path",
    "handcoded_seed",
    "sample_game",
    "split_task_types",
    "task_indices",
]

GENERATOR_VERSION = "v2"
"""Part of every game's random key and cache path: bump it when generation changes."""

TASK_TYPES: tuple[str, ...] = (
    "pick_and_place_simple",
    "look_at_obj_in_light",
    "pick_clean_then_place_in_recep",
    "pick_heat_then_place_in_recep",
    "pick_cool_then_place_in_recep",
    "pick_two_obj_and_place",
)
"""ALFWorld's task types 1–6 (``alfred_tw_env.TASK_TYPES``)."""

SPLIT_TASK_COUNTS: dict[str, tuple[int, ...]] = {
    "train": (790, 308, 650, 459, 533, 813),
    "eval_in_distribution": (35, 13, 27, 16, 25, 24),
    "eval_out_of_distribution": (24, 18, 31, 23, 21, 17),
}
"""Games per task type (in :data:`TASK_TYPES` order) of ALFWorld's train / valid_seen /
valid_unseen sets (Shridhar et al., ICLR 2021, Table 1)."""

SPLIT_SIZES: dict[str, int] = {split: sum(counts) for split, counts in SPLIT_TASK_COUNTS.items()}
"""Games per split: 3,553 / 140 / 134, as ALFWorld's."""

_CHECKED_FILE = Path(__file__).with_name("data") / "handcoded_checked.json"

# The appliance (receptacle type) a task type needs, and the affordance of its object.
_APPLIANCE = {
    "pick_clean_then_place_in_recep": ("SinkBasin", "cleanable"),
    "pick_heat_then_place_in_recep": ("Microwave", "heatable"),
    "pick_cool_then_place_in_recep": ("Fridge", "coolable"),
}
# Furniture a lamp may stand on, best first (lamps are not pickupable and need a receptacle).
_LAMP_STANDS = ("SideTable", "Desk", "Dresser", "Shelf", "CoffeeTable", "DiningTable",
                "TVStand", "ArmChair", "Sofa", "Ottoman", "CounterTop", "Cart")
_INSTANCE_COUNTS, _INSTANCE_WEIGHTS = (1, 2, 3), (6.0, 3.0, 1.0)
_MAX_ATTEMPTS = 50


class GameGenerationError(RuntimeError):
    """No valid game could be drawn (a scene list or constraint leaves nothing to pick)."""


def _scene_fits(scene: Scene, task_type: str) -> bool:
    if scene.room not in ROOM_GOALS[task_type]:
        return False
    if task_type == "look_at_obj_in_light":
        return bool(scene.lamp_types) and any(r.type in _LAMP_STANDS for r in scene.receptacles)
    appliance = _APPLIANCE.get(task_type)
    return appliance is None or appliance[0] in scene.receptacle_types


def _place_pairs(scene: Scene, task_type: str) -> dict[str, list[str]]:
    """Object type → parent receptacle types it may be the target of in this scene."""
    appliance, affordance = _APPLIANCE.get(task_type, ("", ""))
    pairs: dict[str, list[str]] = {}
    for otype in scene.object_types:
        if affordance and otype not in AFFORDANCES[affordance]:
            continue
        holder_types = {r.type for r in scene.holders(otype)}
        parents = sorted(
            rtype for rtype in holder_types
            if rtype != appliance and holder_types - {rtype, appliance}
        )
        if parents:
            pairs[otype] = parents
    return pairs


def _object_id(rng: KeyedRandom, rec: Receptacle, otype: str, taken: set[str]) -> str:
    x, y, z = rec.position
    while True:
        dx, dy, dz = rng.uniform(-0.35, 0.35), rng.uniform(0.0, 0.25), rng.uniform(-0.35, 0.35)
        oid = f"{otype}|{x + dx:+06.2f}|{y + dy:+06.2f}|{z + dz:+06.2f}"
        if oid not in taken:
            taken.add(oid)
            return oid


def _agent_start(rng: KeyedRandom, scene: Scene) -> str:
    taken = {tuple(r.location.split("|")[1:3]) for r in scene.receptacles}
    free = [
        (x, z) for x, z in scene.floor
        if (str(round(x / 0.25)), str(round(z / 0.25))) not in taken
    ]
    x, z = rng.choice(free or list(scene.floor))
    return location_id(x, z, 90 * rng.below(4), 30)


@cache
def split_task_types(split: str) -> tuple[str, ...]:
    """The task type of every game of ``split``, by index: :data:`SPLIT_TASK_COUNTS` exactly,
    each next game going to the type furthest behind its share."""
    counts = SPLIT_TASK_COUNTS[split]
    total = sum(counts)
    assigned = [0] * len(counts)
    order = []
    for i in range(total):
        k = max(range(len(counts)), key=lambda k: (counts[k] * (i + 1) - assigned[k] * total, -k))
        assigned[k] += 1
        order.append(TASK_TYPES[k])
    return tuple(order)


@cache
def task_indices(split: str, task_type: str) -> tuple[int, ...]:
    """The indices of ``split``'s games of ``task_type``, in order."""
    return tuple(i for i, t in enumerate(split_task_types(split)) if t == task_type)


def _check_index(split: str, index: int) -> None:
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; known: {', '.join(SPLITS)}")
    if not 0 <= index < SPLIT_SIZES[split]:
        raise ValueError(f"game index {index} out of range for {split} ({SPLIT_SIZES[split]})")


def candidate_game(split: str, index: int, attempt: int) -> GameSpec | None:
    """Sampling attempt ``attempt`` of game ``index`` (``None`` if the scene drawn cannot host
    the task); ALFRED's sampling rules hold for every candidate."""
    import alfworld.gen.goal_library as goal_library

    _check_index(split, index)
    task_type = split_task_types(split)[index]
    rng = KeyedRandom("arlarena-alfworld-game", GENERATOR_VERSION, split, index, attempt)
    scenes = [n for n in SPLIT_SCENES[split] if _scene_fits(load_scene(n), task_type)]
    if not scenes:
        raise GameGenerationError(f"no {split} scene allows {task_type}")
    scene = load_scene(rng.choice(scenes))
    appliance = _APPLIANCE.get(task_type, ("", ""))[0]
    parent = toggle = ""
    if task_type == "look_at_obj_in_light":
        target, toggle = rng.choice(scene.object_types), rng.choice(scene.lamp_types)
        banned: set[str] = set()
    else:
        pairs = _place_pairs(scene, task_type)
        if not pairs:
            return None
        target = rng.choice(sorted(pairs))
        parent = rng.choice(pairs[target])
        banned = {parent, appliance}

    objects: list[PlacedObject] = []
    taken: set[str] = set()
    for otype in scene.object_types:
        count = rng.weighted(_INSTANCE_COUNTS, _INSTANCE_WEIGHTS)
        holders = scene.holders(otype)
        if otype == target:
            holders = tuple(r for r in holders if r.type not in banned)
            if task_type == "pick_two_obj_and_place":
                count = max(count, 2)
        for _ in range(count):
            rec = rng.choice(holders)
            objects.append(PlacedObject(_object_id(rng, rec, otype, taken), otype, rec.id))
    for lamp in scene.lamp_types:
        stands = [r for r in scene.receptacles if r.type in _LAMP_STANDS and not r.openable]
        if not stands:
            return None
        rec = rng.choice(sorted(stands, key=lambda r: (_LAMP_STANDS.index(r.type), r.id))[:3])
        objects.append(PlacedObject(_object_id(rng, rec, lamp, taken), lamp, rec.id))

    template = rng.choice(goal_library.gdict[task_type]["templates"])
    sentence = template.format(obj=target.lower(), recep=parent.lower(), toggle=toggle.lower())
    return GameSpec(
        split=split,
        index=index,
        scene=scene.number,
        task_type=task_type,
        object_target=target,
        parent_target=parent,
        toggle_target=toggle,
        sentence=sentence,
        objects=tuple(sorted(objects, key=lambda o: o.id)),
        agent_location=_agent_start(rng, scene),
        trial=f"trial_arlarena_{GENERATOR_VERSION}_{split}_{index:05d}",
        attempt=attempt,
    )


def handcoded_seed(spec: GameSpec) -> int:
    """The seed of the hand-coded expert's random draws when it checks ``spec``."""
    key = "\x1f".join(map(str, ("arlarena-alfworld-handcoded", GENERATOR_VERSION, spec.split,
                                 spec.index, spec.attempt)))
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big")


@cache
def checked_attempts() -> dict[str, dict[int, int]]:
    """The shipped expert verdicts, if they are this generator version's: split → {index:
    attempt} for the games whose first candidate the expert failed (any other game of a
    listed split is its first candidate)."""
    if not _CHECKED_FILE.is_file():
        return {}
    data = json.loads(_CHECKED_FILE.read_text(encoding="utf-8"))
    if data.get("generator_version") != GENERATOR_VERSION:
        return {}
    return {split: {int(i): a for i, a in attempts.items()}
            for split, attempts in data["splits"].items()}


def candidate_games(split: str, index: int, start: int = 0) -> Iterator[GameSpec]:
    """The candidates of game ``index`` from attempt ``start`` on (attempts that fail to
    sample are skipped)."""
    for attempt in range(start, _MAX_ATTEMPTS):
        spec = candidate_game(split, index, attempt)
        if spec is not None:
            yield spec


def expert_solves(spec: GameSpec) -> bool:
    """Whether ALFWorld's hand-coded expert wins the game of ``spec`` (played on the native
    engine, in a temporary folder)."""
    from arlarena_envs.alfworld.handcoded import play_handcoded

    with tempfile.TemporaryDirectory(prefix="arlarena-alfworld-check-") as tmp:
        return play_handcoded(write_game(spec, Path(tmp)), seed=handcoded_seed(spec)).won


def expert_checked_attempt(split: str, index: int) -> int:
    """The first sampling attempt of game ``index`` that ALFWorld's expert solves (computed,
    not read from the shipped verdicts)."""
    for spec in candidate_games(split, index):
        if expert_solves(spec):
            return spec.attempt
    task_type = split_task_types(split)[index]
    raise GameGenerationError(f"no {task_type} game for {split}[{index}] that the expert solves")


@lru_cache(maxsize=8192)
def sample_game(split: str, index: int) -> GameSpec:
    """The game ``index`` of ``split`` (task type ``split_task_types(split)[index]``), the same
    everywhere: the first sampling attempt that ALFWorld's hand-coded expert solves.

    Example:
        >>> spec = sample_game("eval_out_of_distribution", 0)
        >>> spec.task_type, spec.scene in (10, 219, 308, 424)
        ('pick_clean_then_place_in_recep', True)
    """
    _check_index(split, index)
    checked = checked_attempts().get(split)
    start = checked.get(index, 0) if checked is not None else expert_checked_attempt(split, index)
    spec = next(candidate_games(split, index, start), None)
    if spec is None:
        task_type = split_task_types(split)[index]
        raise GameGenerationError(f"no valid {task_type} game for {split}[{index}]")
    return spec


def generated_game_path(split: str, index: int, root: Path | None = None) -> Path:
    """Path of generated game ``index`` of ``split``; written into the cache on first use.

    ``root`` defaults to ``<cache_dir()>/generated/<GENERATOR_VERSION>/<split>``.
    """
    spec = sample_game(split, index)
    base = root if root is not None else cache_dir() / "generated" / GENERATOR_VERSION / split
    path = base / game_dir_name(spec) / spec.trial / "game.tw-pddl"
    if path.is_file() and (path.parent / "traj_data.json").is_file():
        return path
    return write_game(spec, base)
