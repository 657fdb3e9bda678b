"""Turn a :class:`GameSpec` into ALFWorld's files: ``game.tw-pddl`` and ``traj_data.json``.

Holds :class:`PlacedObject`, :class:`GameSpec`, :func:`mangle` (ALFRED id → PDDL name),
:func:`problem_text`, :func:`game_data`, :func:`traj_data`, :func:`game_dir_name` and
:func:`write_game`. A game file is JSON with ALFWorld's PDDL domain, its grammar with the task
sentence in place of ``UNKNOWN GOAL``, the problem (objects, initial facts, the goal of
``alfworld/gen/goal_library.py``) and ``solvable``; ``traj_data.json`` beside it carries the task
type and targets the way ALFRED's trajectories do, so ALFWorld's own tools read our games too.
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arlarena_envs.alfworld.resources import domain_text, grammar_text
from arlarena_envs.alfworld.scenes import (
    AFFORDANCES,
    RECEPTACLE_OBJECT_TYPES,
    RECEPTACLE_OBJECTS,
    RECEPTACLE_TYPES,
    Scene,
    load_scene,
)

__all__ = [
    "GameSpec",
    "PlacedObject",
    "game_data",
    "game_dir_name",
    "goal_pddl",
    "mangle",
    "problem_text",
    "traj_data",
    "write_game",
]

_MANGLE = (("-", "_minus_"), ("|", "_bar_"), ("+", "_plus_"), (".", "_dot_"), (",", "_comma_"))


def _object_types() -> tuple[str, ...]:
    import alfworld.gen.constants as constants

    static = set(RECEPTACLE_TYPES)
    return tuple(sorted((set(constants.OBJECTS) | RECEPTACLE_OBJECT_TYPES) - static))


_OTYPES = _object_types()


def mangle(name: str) -> str:
    """ALFRED id → PDDL name (``Apple|+01.00|...`` → ``Apple_bar__plus_01_dot_00...``)."""
    for char, word in _MANGLE:
        name = name.replace(char, word)
    return name


@dataclass(frozen=True)
class PlacedObject:
    """An object instance: ALFRED-style id, type and the id of the receptacle it starts in."""

    id: str
    type: str
    receptacle: str


@dataclass(frozen=True)
class GameSpec:
    """Everything that defines one generated game.

    ``parent_target`` is the receptacle type of placing tasks and ``toggle_target`` the lamp
    type of ``look_at_obj_in_light`` (each is ``""`` where unused), as in ALFRED's
    ``pddl_params``; ``sentence`` is the task line without ``Your task is to:``; ``attempt`` is
    the sampling attempt the game came from.
    """

    split: str
    index: int
    scene: int
    task_type: str
    object_target: str
    parent_target: str
    toggle_target: str
    sentence: str
    objects: tuple[PlacedObject, ...]
    agent_location: str
    trial: str
    attempt: int = 0

    @property
    def scene_data(self) -> Scene:
        """The scene of the game."""
        return load_scene(self.scene)


def goal_pddl(task_type: str, obj: str, recep: str, toggle: str) -> str:
    """The ``(:goal ...)`` of ``goal_library.py`` for a task (it also closes ``(define``)."""
    import alfworld.gen.goal_library as goal_library

    template = goal_library.gdict[task_type]["pddl"].replace("#", "-")
    return template.format(obj=obj, recep=recep, toggle=toggle)


def _init_facts(spec: GameSpec, scene: Scene) -> list[str]:
    facts: list[str] = []
    location = {r.id: r.location for r in scene.receptacles}
    for rec in scene.receptacles:
        name = mangle(rec.id)
        facts.append(f"(receptacleType {name} {rec.type}Type)")
        facts.append(f"(receptacleAtLocation {name} {mangle(rec.location)})")
        if rec.openable:
            facts.append(f"(openable {name})")
    object_types = sorted({o.type for o in spec.objects})
    for rtype in sorted(scene.receptacle_types):
        facts += [
            f"(canContain {rtype}Type {otype}Type)"
            for otype in object_types if otype in RECEPTACLE_OBJECTS[rtype]
        ]
    fridges = {r.id for r in scene.receptacles if r.type == "Fridge"}
    for obj in spec.objects:
        name = mangle(obj.id)
        facts.append(f"(objectType {name} {obj.type}Type)")
        if obj.type not in AFFORDANCES["toggleable"]:
            facts.append(f"(pickupable {name})")
        if obj.type in RECEPTACLE_OBJECT_TYPES:
            facts.append(f"(isReceptacleObject {name})")
        facts += [f"({pred} {name})" for pred, types in AFFORDANCES.items() if obj.type in types]
        if obj.receptacle in fridges and obj.type in AFFORDANCES["coolable"]:
            facts.append(f"(isCool {name})")
        facts.append(f"(inReceptacle {name} {mangle(obj.receptacle)})")
        facts.append(f"(objectAtLocation {name} {mangle(location[obj.receptacle])})")
    facts.append(f"(atLocation agent1 {mangle(spec.agent_location)})")
    return facts


def problem_text(spec: GameSpec) -> str:
    """The PDDL problem of a game."""
    scene = spec.scene_data
    locations = sorted({r.location for r in scene.receptacles} | {spec.agent_location})
    declared = (
        ["agent1 - agent"]
        + [f"{t}Type - otype" for t in _OTYPES]
        + [f"{t}Type - rtype" for t in RECEPTACLE_TYPES]
        + [f"{mangle(o.id)} - object" for o in spec.objects]
        + [f"{mangle(r.id)} - receptacle" for r in scene.receptacles]
        + [f"{mangle(loc)} - location" for loc in locations]
    )
    indent = "\n        "
    goal = goal_pddl(
        spec.task_type, spec.object_target, spec.parent_target, spec.toggle_target
    )
    return (
        f"\n(define (problem plan_{spec.trial})\n(:domain alfred)\n(:objects{indent}"
        + indent.join(declared)
        + f"\n    )\n(:init{indent}"
        + indent.join(_init_facts(spec, scene))
        + "\n    )\n"
        + goal
    )


def game_data(spec: GameSpec) -> dict[str, Any]:
    """The content of ``game.tw-pddl``."""
    return {
        "pddl_domain": domain_text(),
        "grammar": grammar_text().replace("UNKNOWN GOAL", spec.sentence),
        "pddl_problem": problem_text(spec),
        "solvable": True,
    }


def traj_data(spec: GameSpec) -> dict[str, Any]:
    """The content of ``traj_data.json``: what ALFWorld's tools read beside a game."""
    return {
        "task_id": spec.trial,
        "task_type": spec.task_type,
        "pddl_params": {
            "object_target": spec.object_target,
            "parent_target": spec.parent_target,
            "toggle_target": spec.toggle_target,
            "mrecep_target": "",
            "object_sliced": False,
        },
        "scene": {"floor_plan": f"FloorPlan{spec.scene}", "scene_num": spec.scene},
        "turk_annotations": {"anns": [{"task_desc": spec.sentence}]},
        "arlarena": {"split": spec.split, "index": spec.index, "attempt": spec.attempt,
                     "generated": True},
    }


def game_dir_name(spec: GameSpec) -> str:
    """ALFRED's folder name: ``<task_type>-<Obj>-None-<Recep or Lamp>-<scene>``."""
    target = spec.parent_target or spec.toggle_target
    return f"{spec.task_type}-{spec.object_target}-None-{target}-{spec.scene}"


def write_game(spec: GameSpec, root: Path) -> Path:
    """Write ``<root>/<game_dir_name>/<trial>/game.tw-pddl`` (+ ``traj_data.json``) atomically.

    Returns the game file's path. Files are written under a temporary name and renamed, so
    parallel workers generating the same game never see a half-written file.
    """
    directory = root / game_dir_name(spec) / spec.trial
    directory.mkdir(parents=True, exist_ok=True)
    for name, content in (("traj_data.json", traj_data(spec)), ("game.tw-pddl", game_data(spec))):
        target = directory / name
        tmp = target.with_name(f".{name}.{os.getpid()}.{uuid.uuid4().hex}.tmp")
        tmp.write_text(json.dumps(content), encoding="utf-8")
        tmp.replace(target)
    return directory / "game.tw-pddl"
