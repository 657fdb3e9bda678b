"""ALFRED's scenes as ALFWorld games see them, and the scene lists of the three splits.

Holds :class:`Receptacle`, :class:`Scene`, :func:`load_scene` (from the layouts ``alfworld``
ships: ``-openable.json`` for receptacle ids and poses, ``-objects.json`` for the types in the
room, ``-layout.npy`` for the reachable floor), the ALFRED tables the generator needs
(:data:`RECEPTACLE_OBJECTS`, :data:`AFFORDANCES`, ...) and :data:`SPLIT_SCENES`.

The pose list of a layout misses some receptacles (coffee machines, stove burners, toasters,
most garbage cans and towel holders); those named by ``-objects.json`` are added at free floor
points chosen by a generator keyed on the scene number, so a scene is the same in every game.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from types import ModuleType

import numpy as np

from arlarena_envs.alfworld.resources import alfworld_package_dir, layouts_dir
from arlarena_envs.alfworld.seeding import KeyedRandom

__all__ = [
    "AFFORDANCES",
    "LAMP_TYPES",
    "OPENABLE_TYPES",
    "RECEPTACLE_OBJECTS",
    "RECEPTACLE_OBJECT_TYPES",
    "RECEPTACLE_TYPES",
    "ROOM_GOALS",
    "SPLITS",
    "SPLIT_ALIASES",
    "SPLIT_SCENES",
    "UNSEEN_SCENES",
    "Receptacle",
    "Scene",
    "canonical_split",
    "load_scene",
    "location_id",
    "room_of",
]


def _constants() -> ModuleType:
    alfworld_package_dir()  # a clear error if alfworld is missing
    import alfworld.gen.constants as constants

    return constants


_C = _constants()

RECEPTACLE_OBJECTS: dict[str, frozenset[str]] = {
    rtype: frozenset(objs) for rtype, objs in _C.VAL_RECEPTACLE_OBJECTS.items()
}
"""ALFRED's ``VAL_RECEPTACLE_OBJECTS``: receptacle type → the object types it may hold."""

RECEPTACLE_OBJECT_TYPES: frozenset[str] = frozenset(_C.MOVABLE_RECEPTACLES)
"""Movable receptacles: objects in ALFWorld games (``isReceptacleObject``), not receptacles."""

RECEPTACLE_TYPES: tuple[str, ...] = tuple(
    sorted(set(RECEPTACLE_OBJECTS) - RECEPTACLE_OBJECT_TYPES)
)
"""The static receptacle types an ALFWorld game places at locations."""

OPENABLE_TYPES: frozenset[str] = frozenset(_C.OPENABLE_CLASS_LIST)
AFFORDANCES: dict[str, frozenset[str]] = {
    "cleanable": frozenset(_C.VAL_ACTION_OBJECTS["Cleanable"]),
    "heatable": frozenset(_C.VAL_ACTION_OBJECTS["Heatable"]),
    "coolable": frozenset(_C.VAL_ACTION_OBJECTS["Coolable"]),
    "toggleable": frozenset(_C.VAL_ACTION_OBJECTS["Toggleable"]),
    "sliceable": frozenset(_C.VAL_ACTION_OBJECTS["Sliceable"]),
}
"""PDDL affordance predicate → object types that have it (ALFRED's ``VAL_ACTION_OBJECTS``)."""

LAMP_TYPES: tuple[str, ...] = ("DeskLamp", "FloorLamp")
ROOM_GOALS: dict[str, frozenset[str]] = {
    goal: frozenset(rooms) for goal, rooms in _C.GOALS_VALID.items()
}
"""Task type → the room types ALFRED generates it in."""

_ROOMS: dict[str, range] = dict(_C.SCENE_TYPE)

UNSEEN_SCENES: tuple[int, ...] = (10, 219, 308, 424)
"""ALFWorld's ``valid_unseen`` floor plans: out-of-distribution, never used for training."""

SPLITS: tuple[str, ...] = ("train", "eval_in_distribution", "eval_out_of_distribution")
SPLIT_ALIASES: dict[str, str] = {
    "eval": "eval_in_distribution",
    "valid_seen": "eval_in_distribution",
    "valid_unseen": "eval_out_of_distribution",
}
"""Other names accepted for the splits (ALFWorld's data folders; ``eval`` = the study's
validation set, ALFWorld's ``valid_seen``)."""


def canonical_split(name: str) -> str:
    """The split called ``name`` (a split or an alias), or a ``ValueError``."""
    split = SPLIT_ALIASES.get(name, name)
    if split not in SPLITS:
        known = ", ".join([*SPLITS, *SPLIT_ALIASES])
        raise ValueError(f"unknown split {name!r}; known: {known}")
    return split


def _all_scenes() -> tuple[int, ...]:
    names = (p.name.split("-")[0] for p in layouts_dir().glob("FloorPlan*-objects.json"))
    return tuple(sorted(int(name.removeprefix("FloorPlan")) for name in names))


_SEEN = tuple(n for n in _all_scenes() if n not in UNSEEN_SCENES)
SPLIT_SCENES: dict[str, tuple[int, ...]] = {
    "train": _SEEN,
    "eval_in_distribution": _SEEN,
    "eval_out_of_distribution": UNSEEN_SCENES,
}
"""Floor plans per split: seen scenes for training and in-distribution evaluation (new
instances), ALFWorld's unseen scenes for out-of-distribution evaluation."""

# How many of a missing receptacle type to add, and the height (m) their ids get.
_ADDED_COUNT = {"StoveBurner": 4}
_ADDED_HEIGHT = {"GarbageCan": 0.0, "LaundryHamper": 0.0, "Toilet": 0.0, "TowelHolder": 1.1,
                 "HandTowelHolder": 1.3, "ToiletPaperHanger": 0.7}
_ADDED_HORIZON = {"GarbageCan": 60, "LaundryHamper": 60, "Toilet": 15, "TowelHolder": 0,
                  "HandTowelHolder": 0, "ToiletPaperHanger": 30}
_BASIN_PARENT = {"SinkBasin": "Sink", "BathtubBasin": "Bathtub"}


@dataclass(frozen=True)
class Receptacle:
    """A static receptacle: ALFRED id (``Type|x|y|z`` or ``Sink|x|y|z|SinkBasin``), type,
    location id (``loc|X|Z|R|H``) and whether it opens."""

    id: str
    type: str
    location: str
    openable: bool

    @property
    def position(self) -> tuple[float, float, float]:
        """The ``(x, y, z)`` coordinates in the id."""
        x, y, z = (float(v) for v in self.id.split("|")[1:4])
        return x, y, z


@dataclass(frozen=True)
class Scene:
    """One ALFRED floor plan as an ALFWorld game uses it.

    Attributes:
        number: the floor plan number (``FloorPlan<number>``).
        room: ``Kitchen``, ``LivingRoom``, ``Bedroom`` or ``Bathroom``.
        receptacles: the static receptacles, sorted by id.
        object_types: the types of the room that some receptacle of the room can hold (the
            candidates for placement), sorted.
        lamp_types: the lamps of the room (not pickupable; toggled in look-at-light tasks).
        floor: reachable floor points ``(x, z)`` in metres.
    """

    number: int
    room: str
    receptacles: tuple[Receptacle, ...]
    object_types: tuple[str, ...]
    lamp_types: tuple[str, ...]
    floor: tuple[tuple[float, float], ...]

    @property
    def receptacle_types(self) -> frozenset[str]:
        """The receptacle types present."""
        return frozenset(r.type for r in self.receptacles)

    def holders(self, object_type: str) -> tuple[Receptacle, ...]:
        """The receptacles whose type may hold ``object_type``."""
        return tuple(r for r in self.receptacles if object_type in RECEPTACLE_OBJECTS[r.type])


def room_of(number: int) -> str:
    """The room type of a floor plan number."""
    for room, numbers in _ROOMS.items():
        if number in numbers:
            return room
    raise ValueError(f"FloorPlan{number} is not an ALFRED scene")


def location_id(x: float, z: float, rotation: float, horizon: float) -> str:
    """ALFWorld's location id: grid position (0.25 m steps), rotation / 90, camera tilt."""
    return f"loc|{round(x / 0.25)}|{round(z / 0.25)}|{round(rotation) // 90 % 4}|{round(horizon)}"


def _coord(value: float) -> str:
    return f"{value:+06.2f}"


def _receptacle_type(rid: str) -> str:
    parts = rid.split("|")
    return parts[4] if len(parts) == 5 else parts[0]


def _added_receptacles(
    number: int, missing: list[str], floor: np.ndarray, taken: set[tuple[int, int]]
) -> list[Receptacle]:
    added = []
    for rtype in missing:
        for i in range(_ADDED_COUNT.get(rtype, 1)):
            rng = KeyedRandom("alfworld-scene", number, rtype, i)
            free = [p for p in floor if (round(p[0] / 0.25), round(p[1] / 0.25)) not in taken]
            x, z = (float(v) for v in rng.choice(free or list(floor)))
            taken.add((round(x / 0.25), round(z / 0.25)))
            rotation = 90 * rng.below(4)
            dx, dz = {0: (0.0, 0.5), 90: (0.5, 0.0), 180: (0.0, -0.5), 270: (-0.5, 0.0)}[rotation]
            coords = "|".join(_coord(v) for v in (x + dx, _ADDED_HEIGHT.get(rtype, 0.9), z + dz))
            parent = _BASIN_PARENT.get(rtype)
            rid = f"{parent}|{coords}|{rtype}" if parent else f"{rtype}|{coords}"
            location = location_id(x, z, rotation, _ADDED_HORIZON.get(rtype, 30))
            added.append(Receptacle(rid, rtype, location, rtype in OPENABLE_TYPES))
    return added


@cache
def load_scene(number: int) -> Scene:
    """Load ``FloorPlan<number>`` from ALFWorld's layouts (cached)."""
    base = layouts_dir() / f"FloorPlan{number}"
    poses: dict[str, list[float]] = json.loads(
        base.with_name(base.name + "-openable.json").read_text()
    )
    present: set[str] = set(json.loads(base.with_name(base.name + "-objects.json").read_text()))
    floor = np.load(base.with_name(base.name + "-layout.npy"))
    receptacles = [
        Receptacle(rid, rtype, location_id(*pose), rtype in OPENABLE_TYPES)
        for rid, pose in poses.items()
        if (rtype := _receptacle_type(rid)) in RECEPTACLE_TYPES
    ]
    have = {r.type for r in receptacles}
    missing = [t for t in RECEPTACLE_TYPES if t in present and t not in have]
    taken = {tuple(int(v) for v in r.location.split("|")[1:3]) for r in receptacles}
    receptacles += _added_receptacles(number, missing, floor, taken)
    rtypes = {r.type for r in receptacles}
    object_types = sorted(
        t for t in present
        if t not in RECEPTACLE_TYPES and t not in LAMP_TYPES
        and any(t in RECEPTACLE_OBJECTS[rt] for rt in rtypes)
    )
    return Scene(
        number=number,
        room=room_of(number),
        receptacles=tuple(sorted(receptacles, key=lambda r: r.id)),
        object_types=tuple(object_types),
        lamp_types=tuple(t for t in LAMP_TYPES if t in present),
        floor=tuple((float(x), float(z)) for x, z in floor),
    )
