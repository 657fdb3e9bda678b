"""The native ALFWorld engine against TextWorld: the differential test and the pieces under it.

* ``test_native_replays_textworlds_transcripts``: TextWorld's runs of 2,006 generated games
  over all splits and task types (random admissible commands, then the planner expert to the
  win), recorded by ``python bench/alfworld.py --only soak --record ...``, replayed natively;
  every step's observation, admissible list, reward, done and won must digest the same. A
  mismatch replays the game on TextWorld and names the game, the step and what differs.
* ``test_native_matches_textworld_live``: the same comparison with both engines running, on
  games of every task type, propositions included.
* the grammar parses as TextWorld's Tatsu parser reads it; names are ALFWorld's Demangler's;
  Fast Downward's translation quirks are reproduced; hostile game files fail cleanly.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from collections import Counter
from pathlib import Path

import pytest

from arlarena_envs.alfworld.differential import compare_engines, replay_digest
from arlarena_envs.alfworld.generator import (
    GENERATOR_VERSION,
    TASK_TYPES,
    generated_game_path,
    sample_game,
    split_task_types,
)
from arlarena_envs.alfworld.native import NativeEngine, NativeGame, display_names
from arlarena_envs.alfworld.pddl import PddlError
from arlarena_envs.alfworld.problem import game_data, mangle
from arlarena_envs.alfworld.scenes import SPLITS
from arlarena_envs.alfworld.textgen import GrammarError, parse_grammar

TRANSCRIPTS = Path(__file__).with_name("test_alfworld_textworld_transcripts.json.gz")
OOD = "eval_out_of_distribution"


def _first_of_each_type(split: str) -> dict[str, int]:
    """The index of the first game of each task type in ``split``."""
    found: dict[str, int] = {}
    for index, task_type in enumerate(split_task_types(split)):
        found.setdefault(task_type, index)
    return found


@pytest.fixture(scope="module")
def recorded() -> dict:
    """TextWorld's recorded transcripts (``TRANSCRIPTS``)."""
    with gzip.open(TRANSCRIPTS, "rt", encoding="utf-8") as f:
        return json.load(f)


def test_native_replays_textworlds_transcripts(tmp_path, recorded):
    assert recorded["generator_version"] == GENERATOR_VERSION, (
        "the transcripts are of another generator version: re-record them with "
        f"`python bench/alfworld.py --only soak --soak-games 2000 --record {TRANSCRIPTS}`")
    games = recorded["games"]
    assert len(games) >= 2000
    assert {g["split"] for g in games} == set(SPLITS)
    kinds = Counter((g["split"], split_task_types(g["split"])[g["index"]]) for g in games)
    assert {(s, t) for s in SPLITS for t in TASK_TYPES} <= set(kinds)
    assert sum(g["random_steps"] == 0 for g in games) > 50  # plain expert plans too
    assert sum(g["won"] for g in games) == len(games)
    failures = []
    for game in games:
        path = generated_game_path(game["split"], game["index"], tmp_path / game["split"])
        assert hashlib.sha256(path.read_bytes()).hexdigest()[:16] == game["game_sha256"], game
        digest, turns = replay_digest("native", path, game["choices"])
        if digest != game["digest"] or turns[-1].won != game["won"]:
            failures.append((game, path))
    messages = []
    for game, path in failures[:3]:  # TextWorld tells where the native engine went wrong
        _, native = replay_digest("native", path, game["choices"])
        _, textworld = replay_digest("textworld", path, game["choices"])
        step = next((i for i, (a, b) in enumerate(zip(textworld, native, strict=False))
                     if a != b), min(len(textworld), len(native)))
        tw, nat = (turns[step] if step < len(turns) else None for turns in (textworld, native))
        messages.append(f"{game['split']}[{game['index']}] step {step}:\n  textworld: {tw}\n"
                        f"  native:    {nat}")
    assert not failures, f"{len(failures)} of {len(games)} games differ:\n" + "\n".join(messages)


def test_the_docs_quote_the_transcripts_figures(recorded):
    """What the ALFWorld and fidelity pages say of the differential test is what the recording
    holds."""
    games = recorded["games"]
    types = Counter(split_task_types(g["split"])[g["index"]] for g in games)
    steps = sum(len(g["choices"]) for g in games)  # every command, random ones and the expert's
    docs = Path(__file__).parents[1] / "docs"
    readme = " ".join(" ".join(p.read_text() for p in (docs / "envs" / "alfworld.md",
                                                        docs / "fidelity.md")).split())
    for phrase in (
        f"recorded transcripts of {len(games):,} generated games",
        f"both eval splits and {sum(g['split'] == 'train' for g in games):,} train games",
        f"0–{recorded['random_steps']} random admissible commands",
        f"none in {sum(g['random_steps'] == 0 for g in games):,} games",
        f"planner expert to the win, {steps:,} steps",
        f"no mismatch over the {len(games):,} games, per task type "
        + " / ".join(str(types[t]) for t in TASK_TYPES) + " games",
        f"byte for byte on {len(games):,} recorded games ({steps:,} steps, every step compared",
    ):
        assert phrase in readme, phrase


def test_native_matches_textworld_live(tmp_path):
    """Both engines side by side (the installed TextWorld, not a recording), propositions
    included, on a bathroom cleaning game and a bedroom lamp game."""
    for task_type in ("pick_clean_then_place_in_recep", "look_at_obj_in_light"):
        index = next(i for i in range(134) if split_task_types(OOD)[i] == task_type
                     and sample_game(OOD, i).scene in (308, 424))
        path = generated_game_path(OOD, index, tmp_path)
        result = compare_engines(path, key=f"live/{index}", max_random_steps=5)
        assert result.mismatch is None, (index, result.mismatch)
        assert result.won and len(result.choices) >= 3


def test_grammar_compiles_as_textworlds_parser_reads_it():
    from textworld.envs.pddl import textgen
    from textworld.envs.pddl.logic import GameLogic

    data = game_data(sample_game(OOD, 0))
    logic = GameLogic(domain=data["pddl_domain"], grammar=data["grammar"])
    mine = parse_grammar(data["grammar"])

    def theirs(sym):
        if isinstance(sym, textgen.ListSymbol):
            return ("list", theirs(sym.symbol))
        if isinstance(sym, textgen.ConditionalSymbol):
            return ("cond", theirs(sym.expression), (sym.given or "").strip() or None)
        if isinstance(sym, textgen.EvalSymbol):
            return ("eval", sym.expression)
        if isinstance(sym, textgen.NonterminalSymbol):
            return ("ref", sym.symbol)
        return ("text", sym.symbol)

    def ours(sym):
        kind = type(sym).__name__
        if kind == "ListOf":
            return ("list", ours(sym.item))
        if kind == "Cond":
            return ("cond", ours(sym.expression), sym.query.source.strip() if sym.query else None)
        if kind == "Expr":
            return ("eval", sym.source)
        return ("ref", sym.name) if kind == "Ref" else ("text", sym.text)

    assert set(mine.rules) == set(logic.grammar._rules)
    for name, rules in logic.grammar._rules.items():
        for rule, compiled in zip(rules, mine.rules[name], strict=True):
            expected = [theirs(s) for s in rule.rhs if str(s) != ""]
            assert [ours(s) for s in compiled.symbols] == expected, name
            assert (rule.condition or None) == (
                compiled.condition.source if compiled.condition else None)
    for name, action in logic.actions.items():
        template, feedback = mine.actions[name]
        for text, symbols in ((action.template, template), (action.feedback_rule, feedback)):
            expected = [theirs(s) for s in textgen._parse_and_convert(text, rule_name="symbols")]
            assert [ours(s) for s in symbols] == expected, name
    assert mine.rules["help.feedback"][0].symbols[0].text.startswith("Available commands:")


def test_display_names_are_alfworlds_demangler_names():
    from alfworld.agents.utils.misc import Demangler

    ids = [mangle(i).lower() for i in (
        "Cabinet|+00.68|+00.50|-02.20", "Cabinet|-01.18|+00.50|-02.20", "Apple|+01.00|+00.9|-01.1",
        "Sink|-01.90|+00.97|-01.50|SinkBasin", "SinkBasin|-01.90|+00.97|-01.50",
        "Cabinet|+00.01|+00.50|-02.20", "loc|3|-4|1|30", "loc|-1|2|0|60")] + [
        "agent1", "appletype", "sinkbasintype"]
    infos = {name: type("Info", (), {"id": name})() for name in ids}
    demangler = Demangler(game_infos=infos, shuffle=False)
    assert display_names(ids) == {name: demangler.demangle_alfred_name(name) for name in ids}
    # Numbers count down in the order of the mangled ids, where "_minus_" sorts before "_plus_".
    names = display_names(ids)
    assert [names[mangle(f"Cabinet|{x}|+00.50|-02.20").lower()] for x in (
        "-01.18", "+00.01", "+00.68")] == ["cabinet 3", "cabinet 2", "cabinet 1"]
    assert names[ids[3]] == "sinkbasin 1" and names[ids[4]] == "sinkbasinbasin 1"
    assert names["agent1"] == "agent1 " and names[ids[6]] in ("loc 1", "loc 2")


def test_fast_downwards_operator_semantics(tmp_path):
    """Going where the agent is drops out (a no-op operator), and toggling a lamp leaves
    TextWorld's proposition ``not_ison`` while the planning state has the lamp on."""
    index = _first_of_each_type(OOD)["look_at_obj_in_light"]
    engine = NativeEngine()
    engine.load(generated_game_path(OOD, index, tmp_path))
    turn = engine.reset()
    go = next(c for c in turn.admissible_commands if c.startswith("go to "))
    turn = engine.step(go)
    assert go not in turn.admissible_commands and "look" in turn.admissible_commands
    lamp_type = sample_game(OOD, index).toggle_target.lower()
    turn = engine.reset()
    for command in [c for c in turn.admissible_commands if c.startswith("go to ")]:
        if command in turn.admissible_commands:  # not where the agent already is
            turn = engine.step(command)
        use = next((c for c in turn.admissible_commands if c.startswith(f"use {lamp_type}")), None)
        if use:
            break
    assert use, "no receptacle holds the lamp"
    turn = engine.step(use)
    assert turn.feedback == f"You turn on the {use.removeprefix('use ')}."
    facts = {pred: args for pred, args in engine.facts()}
    assert "ison" not in facts and facts["not_ison"] == facts["istoggled"]
    lamp = engine.game.task.ids[facts["istoggled"][0][0]]
    assert engine._store.holds("ison", (lamp,))  # the planning state has the lamp on


def test_hostile_or_broken_game_files_fail_cleanly():
    data = game_data(sample_game(OOD, 1))
    evil = data["grammar"].replace("{r.name}.", "{__import__('os').system('touch /tmp/x')}.", 1)
    with pytest.raises(GrammarError, match="unsupported expression"):
        NativeGame({**data, "grammar": evil})
    with pytest.raises(PddlError):
        NativeGame({**data, "pddl_problem": data["pddl_problem"].replace("(:init", "(:init (", 1)})
    with pytest.raises(PddlError, match="undeclared object"):
        NativeGame({**data, "pddl_problem": data["pddl_problem"].replace(
            "(:init", "(:init (holds agent1 nowhere)", 1)})
    engine = NativeEngine()
    with pytest.raises(RuntimeError, match=r"^load\(\) a game first$") as raised:
        engine.reset()
    assert type(raised.value) is RuntimeError  # not a subclass standing in for it
