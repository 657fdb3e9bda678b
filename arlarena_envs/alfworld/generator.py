"""Generate ALFWorld games offline, reproducibly, from the scenes and goals ``alfworld`` ships.

Holds :data:`TASK_TYPES` (ALFWorld's six, in its order), :data:`GENERATOR_VERSION`,
:func:`sample_game` (split + index → :class:`~arlarena_envs.alfworld.problem.GameSpec`) and
:func:`generated_game_path` (the game file in the cache, written on first use).

A game is a real ALFRED floor plan (its receptacles and the object types of the room), objects
placed where ALFRED allows them (``VAL_RECEPTACLE_OBJECTS``; closed cabinets, drawers and fridges
included) and one goal drawn with ALFRED's sampling rules, so every game is solvable by
construction: the target object exists and can be picked up, the parent receptacle type exists
and may hold it, the appliance of clean/heat/cool exists, a look task has a lamp that is off, and
the goal does not hold at the start. Task types cycle with the index (index % 6), so any run of
six consecutive indices covers every type once.
"""

from __future__ import annotations

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
    "TASK_TYPES",
    "GameGenerationError",
    "generated_game_path",
    "sample_game",
]

GENERATOR_VERSION = "v1"
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

SPLIT_SIZES: dict[str, int] = {
    "train": 3553,
    "eval_in_distribution": 140,
    "eval_out_of_distribution": 134,
}
"""Games per split: the sizes of ALFWorld's train / valid_seen / valid_unseen sets."""

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


def _try_sample(split: str, index: int, task_type: str, attempt: int) -> GameSpec | None:
    import alfworld.gen.goal_library as goal_library

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
    )


def sample_game(split: str, index: int) -> GameSpec:
    """The game ``index`` of ``split`` (task type ``TASK_TYPES[index % 6]``), the same everywhere.

    Example:
        >>> spec = sample_game("eval_out_of_distribution", 0)
        >>> spec.task_type, spec.scene in (10, 219, 308, 424)
        ('pick_and_place_simple', True)
    """
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; known: {', '.join(SPLITS)}")
    if index < 0:
        raise ValueError(f"game index must be >= 0, got {index}")
    task_type = TASK_TYPES[index % len(TASK_TYPES)]
    for attempt in range(_MAX_ATTEMPTS):
        spec = _try_sample(split, index, task_type, attempt)
        if spec is not None:
            return spec
    raise GameGenerationError(f"no valid {task_type} game for {split}[{index}]")


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
