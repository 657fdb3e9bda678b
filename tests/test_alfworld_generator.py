"""ALFWorld game generation: determinism, splits, ALFWorld's task mix, ALFRED's sampling rules,
ALFWorld's hand-coded expert as the judge of every game, the file format."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from collections import Counter

import pytest

from arlarena_envs.alfworld.catalog import GeneratedGames
from arlarena_envs.alfworld.generator import (
    GENERATOR_VERSION,
    SPLIT_SIZES,
    SPLIT_TASK_COUNTS,
    TASK_TYPES,
    candidate_games,
    checked_attempts,
    expert_checked_attempt,
    expert_solves,
    generated_game_path,
    sample_game,
    split_task_types,
    task_indices,
)
from arlarena_envs.alfworld.problem import game_data, mangle, write_game
from arlarena_envs.alfworld.scenes import (
    AFFORDANCES,
    RECEPTACLE_OBJECTS,
    SPLIT_SCENES,
    SPLITS,
    UNSEEN_SCENES,
    canonical_split,
    load_scene,
    room_of,
)

_APPLIANCE = {"pick_clean_then_place_in_recep": ("SinkBasin", "cleanable"),
              "pick_heat_then_place_in_recep": ("Microwave", "heatable"),
              "pick_cool_then_place_in_recep": ("Fridge", "coolable")}


def _digest(split: str, index: int, root) -> str:
    path = generated_game_path(split, index, root)
    data = path.read_bytes() + (path.parent / "traj_data.json").read_bytes()
    return hashlib.sha256(data).hexdigest()


def test_same_index_gives_byte_identical_files(tmp_path):
    for split, index in (("train", 5), ("eval_out_of_distribution", 2)):
        cached = sample_game(split, index)
        again = sample_game.__wrapped__(split, index)  # sampled anew, past the lru_cache
        assert again == cached and again is not cached
        first = _digest(split, index, tmp_path / "a")
        sample_game.cache_clear()  # the second files are written from a fresh sample too
        assert first == _digest(split, index, tmp_path / "b")
    assert _digest("train", 5, tmp_path / "a") != _digest("train", 11, tmp_path / "a")


def test_games_do_not_depend_on_the_process_hash_seed(tmp_path):
    code = (
        "import sys, hashlib, pathlib;"
        "from arlarena_envs.alfworld.generator import generated_game_path;"
        "p = generated_game_path('eval_in_distribution', 7, pathlib.Path(sys.argv[1]));"
        "print(hashlib.sha256(p.read_bytes()).hexdigest())"
    )
    digests = set()
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        out = subprocess.run([sys.executable, "-c", code, str(tmp_path / hash_seed)], env=env,
                             capture_output=True, text=True, check=True)
        digests.add(out.stdout.strip())
    assert len(digests) == 1


def test_out_of_distribution_scenes_never_appear_in_training():
    assert set(SPLIT_SCENES["eval_out_of_distribution"]) == set(UNSEEN_SCENES)
    assert not set(SPLIT_SCENES["train"]) & set(UNSEEN_SCENES)
    assert set(SPLIT_SCENES["eval_in_distribution"]) == set(SPLIT_SCENES["train"])
    train = {sample_game("train", i).scene for i in range(240)}
    ood = {sample_game("eval_out_of_distribution", i).scene for i in range(SPLIT_SIZES[
        "eval_out_of_distribution"])}
    assert not train & ood
    assert ood == set(UNSEEN_SCENES)
    assert len(train) > 60  # training games spread over many seen scenes


def test_in_distribution_eval_has_new_instances_of_seen_scenes():
    for i in range(60):
        train, evaluation = sample_game("train", i), sample_game("eval_in_distribution", i)
        assert evaluation.scene in SPLIT_SCENES["train"]
        assert (train.scene, train.objects) != (evaluation.scene, evaluation.objects)


def test_each_split_has_alfworlds_task_mix():
    alfworld = {  # ALFWorld (ICLR 2021), Table 1: pick, look, clean, heat, cool, pick-two
        "train": (790, 308, 650, 459, 533, 813),
        "eval_in_distribution": (35, 13, 27, 16, 25, 24),
        "eval_out_of_distribution": (24, 18, 31, 23, 21, 17),
    }
    assert SPLIT_TASK_COUNTS == alfworld
    games = GeneratedGames()
    for split in SPLITS:
        types = split_task_types(split)
        counts = Counter(types)
        assert [counts[t] for t in TASK_TYPES] == list(alfworld[split]) == [
            games.count(split, t) for t in TASK_TYPES]
        assert len(types) == SPLIT_SIZES[split] == games.count(split)
        for n in range(1, len(types) + 1, 7):  # every prefix keeps the proportions
            prefix = Counter(types[:n])
            for k, t in enumerate(TASK_TYPES):
                assert abs(prefix[t] - n * alfworld[split][k] / len(types)) < 1, (split, n, t)
        for t in TASK_TYPES:
            assert [types[i] for i in task_indices(split, t)] == [t] * counts[t]
    assert [sample_game("eval_in_distribution", i).task_type for i in range(12)] == list(
        split_task_types("eval_in_distribution")[:12])


def test_every_game_is_one_alfworlds_hand_coded_expert_solves():
    checked = checked_attempts()
    assert set(checked) == set(SPLITS), "data/handcoded_checked.json is missing or stale"
    redrawn = [(split, index, attempt) for split in SPLITS
               for index, attempt in sorted(checked[split].items())]
    assert redrawn, "no game needed a second draw: suspicious over 3,827 games"
    # Games the expert failed at first: it fails the first candidate, solves the one shipped.
    for split, index, attempt in redrawn[:: max(1, len(redrawn) // 4)]:
        first = next(candidate_games(split, index))
        assert first.attempt < attempt and not expert_solves(first)
        assert sample_game(split, index).attempt == attempt
        assert expert_checked_attempt(split, index) == attempt
    # Any other game: the shipped verdict is the expert's (one game per task type).
    for task_type in TASK_TYPES:
        split = SPLITS[TASK_TYPES.index(task_type) % 3]
        index = next(i for i in task_indices(split, task_type) if i not in checked[split])
        assert expert_checked_attempt(split, index) == sample_game(split, index).attempt


def test_game_caches_are_versioned(tmp_path):
    path = GeneratedGames(tmp_path).get("eval", 0).path
    assert f"/generated/{GENERATOR_VERSION}/eval_in_distribution/" in str(path)
    assert GENERATOR_VERSION != "v1"  # v1 games (uniform task mix, unchecked) are not reused
    traj = json.loads((path.parent / "traj_data.json").read_text())
    assert traj["arlarena"]["attempt"] == sample_game("eval_in_distribution", 0).attempt


@pytest.mark.parametrize("split", SPLITS)
def test_games_follow_alfreds_sampling_rules(split):
    for index in range(90):
        spec = sample_game(split, index)
        scene = load_scene(spec.scene)
        by_id = {r.id: r for r in scene.receptacles}
        assert spec.task_type == split_task_types(split)[index]
        assert room_of(spec.scene) in {"Kitchen", "LivingRoom", "Bedroom", "Bathroom"}
        assert len({o.id for o in spec.objects}) == len(spec.objects)
        assert spec.agent_location not in {r.location for r in scene.receptacles}
        for obj in spec.objects:
            holder = by_id[obj.receptacle]
            if obj.type not in ("DeskLamp", "FloorLamp"):
                assert obj.type in RECEPTACLE_OBJECTS[holder.type], (obj, holder)
        targets = [o for o in spec.objects if o.type == spec.object_target]
        assert targets, spec
        if spec.task_type == "look_at_obj_in_light":
            lamps = [o for o in spec.objects if o.type == spec.toggle_target]
            assert lamps and not by_id[lamps[0].receptacle].openable
            assert spec.sentence in (f"look at {spec.object_target.lower()} under the "
                                     f"{spec.toggle_target.lower()}",
                                     f"examine the {spec.object_target.lower()} with the "
                                     f"{spec.toggle_target.lower()}")
            continue
        parent = spec.parent_target
        assert parent in scene.receptacle_types
        assert spec.object_target in RECEPTACLE_OBJECTS[parent]
        assert spec.parent_target.lower() in spec.sentence
        # the goal does not hold at the start: no target object already in a parent receptacle
        assert all(by_id[o.receptacle].type != parent for o in targets)
        if spec.task_type in _APPLIANCE:
            appliance, affordance = _APPLIANCE[spec.task_type]
            assert appliance in scene.receptacle_types and parent != appliance
            assert spec.object_target in AFFORDANCES[affordance]
            assert all(by_id[o.receptacle].type != appliance for o in targets)
        if spec.task_type == "pick_two_obj_and_place":
            assert len(targets) >= 2


def test_game_file_is_alfworlds_format(tmp_path):
    spec = sample_game("train", task_indices("train", "pick_heat_then_place_in_recep")[0])
    data = game_data(spec)
    assert set(data) == {"pddl_domain", "grammar", "pddl_problem", "solvable"}
    assert data["solvable"] is True
    assert "UNKNOWN GOAL" not in data["grammar"]
    assert f"Your task is to: {spec.sentence}." in data["grammar"]
    problem = data["pddl_problem"]
    assert problem.count("(") == problem.count(")")
    assert "(:goal" in problem and f"{spec.object_target}Type" in problem.split("(:goal")[1]
    assert "(isHot ?o)" in problem
    for obj in spec.objects:
        assert f"(objectType {mangle(obj.id)} {obj.type}Type)" in problem
        assert f"(inReceptacle {mangle(obj.id)} {mangle(obj.receptacle)})" in problem
    path = write_game(spec, tmp_path)
    assert path.parent.parent.name == (f"{spec.task_type}-{spec.object_target}-None-"
                                       f"{spec.parent_target}-{spec.scene}")
    traj = json.loads((path.parent / "traj_data.json").read_text())
    assert traj["task_type"] == spec.task_type
    assert traj["pddl_params"]["object_target"] == spec.object_target
    assert json.loads(path.read_text()) == data


def test_mangling_matches_alfworlds_demangler():
    from alfworld.agents.utils.misc import Demangler

    assert mangle("Sink|-01.90|+00.97|-01.50|SinkBasin") == (
        "Sink_bar__minus_01_dot_90_bar__plus_00_dot_97_bar__minus_01_dot_50_bar_SinkBasin")
    infos = {name: type("Info", (), {"id": name})() for name in (
        mangle("Sink|-01.90|+00.97|-01.50|SinkBasin").lower(),
        mangle("Cabinet|+00.68|+00.50|-02.20").lower(),
        mangle("Cabinet|-01.18|+00.50|-02.20").lower())}
    demangler = Demangler(game_infos=infos)
    names = sorted(demangler.demangle_alfred_name(n).strip() for n in infos)
    assert names == ["cabinet 1", "cabinet 2", "sinkbasin 1"]


def test_every_scene_loads_with_receptacles_and_objects():
    for number in SPLIT_SCENES["train"] + UNSEEN_SCENES:
        scene = load_scene(number)
        assert scene.receptacles and scene.object_types
        assert all(re.fullmatch(r"loc\|-?\d+\|-?\d+\|[0-3]\|-?\d+", r.location)
                   for r in scene.receptacles)
        assert all(scene.holders(t) for t in scene.object_types)
    kitchen = load_scene(1)
    assert {"StoveBurner", "CoffeeMachine", "Toaster"} <= kitchen.receptacle_types
    load_scene.cache_clear()
    assert load_scene(1) == kitchen  # added receptacles are keyed on the scene: same every time


def test_generated_source_counts_and_filters(tmp_path):
    games = GeneratedGames(tmp_path)
    assert games.count("train") == 3553 and games.count("eval") == 140
    assert sum(games.count("eval_out_of_distribution", t) for t in TASK_TYPES) == 134
    ref = games.get("valid_unseen", 3, "pick_cool_then_place_in_recep")
    assert ref.task_type == "pick_cool_then_place_in_recep"
    assert ref.index == task_indices("eval_out_of_distribution", ref.task_type)[3]
    assert ref.split == "eval_out_of_distribution" and ref.path.is_file()
    assert canonical_split("eval") == "eval_in_distribution"
    for bad, message in (
        (("nope", 0, None), "unknown split 'nope'"),
        (("train", 3553, None), r"game index 3553 out of range for train \(3553 games\)"),
        (("train", -1, None), "game index -1 out of range for train "),
        (("train", 0, "cook_dinner"), "unknown task type 'cook_dinner'"),
        (("valid_unseen", 18, "look_at_obj_in_light"),
         r"game index 18 out of range for valid_unseen \(18 games\)"),
    ):
        with pytest.raises(ValueError, match=message):
            games.get(*bad)
    with pytest.raises(ValueError, match=r"game index 134 out of range for eval_out_of_distr"):
        sample_game("eval_out_of_distribution", 134)
