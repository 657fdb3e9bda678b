"""The format checks of docs/prompts.md case by case: the study's per env, ARLArena's strict."""

from __future__ import annotations

import pytest

from wrappers.format import (
    FORMAT_CHECKS,
    MAX_RESPONSE_CHARS,
    contains_cjk,
    is_admissible,
    parse_response,
)

MOVES = ["up", "down", "left", "right"]
SHOP = ["search[<your query>]", "click[buy now]", "click[< prev]"]

# (response, admissible, lowercase, format_ok, extracted action)
CASES = [
    ("<think>push right</think><action>right</action>", MOVES, True, True, "right"),
    ("  <think>a</think>\n\n<action> up </action>\n", MOVES, True, True, "up"),
    ("<THINK>a</THINK><ACTION>Left</ACTION>", MOVES, True, True, "left"),
    ("<Think>multi\nline\nplan</Think> <Action>DOWN</Action>", MOVES, True, True, "down"),
    ("<think></think><action>up</action>", MOVES, True, True, "up"),
    ("<action>up</action>", MOVES, True, False, "up"),
    ("<think>a</think>", MOVES, True, False, None),
    ("up", MOVES, True, False, None),
    ("", MOVES, True, False, None),
    ("<think>a</think><action>up</action><action>down</action>", MOVES, True, False, "up"),
    ("<think>a</think><think>b</think><action>up</action>", MOVES, True, False, "up"),
    ("Sure! <think>a</think><action>up</action>", MOVES, True, False, "up"),
    ("<think>a</think><action>up</action> Done.", MOVES, True, False, "up"),
    ("<think>a</think> so <action>up</action>", MOVES, True, False, "up"),
    ("<action>up</action><think>a</think>", MOVES, True, False, "up"),
    ("<think>向上推</think><action>up</action>", MOVES, True, False, "up"),
    ("<think>a</think><action>上</action>", MOVES, True, False, "上"),
    ("<think>これは</think><action>left</action>", MOVES, True, False, "left"),
    ("<think>상자</think><action>left</action>", MOVES, True, False, "left"),
    ("<think>a</think><action></action>", MOVES, True, False, ""),
    ("<think>a</think><action>   </action>", MOVES, True, False, ""),
    ("<think>a</think><action>jump</action>", MOVES, True, False, "jump"),
    ("<think>a</think><action>up down</action>", MOVES, True, False, "up down"),
    ("<think>a<think>b</think></think><action>up</action>", MOVES, True, False, "up"),
    ("<think>a</think><action><action>up</action></action>", MOVES, True, False, "<action>up"),
    ("<think>a</think><action>up", MOVES, True, False, None),
    ("<think>a<action>up</action>", MOVES, True, False, "up"),
    ("<think>a</think><action>anything</action>", [], True, True, "anything"),
    ("<think>x</think><action>search[Red Shoes]</action>", SHOP, False, True, "search[Red Shoes]"),
    ("<think>x</think><action>search[]</action>", SHOP, False, False, "search[]"),
    ("<think>x</think><action>click[Buy Now]</action>", SHOP, False, False, "click[Buy Now]"),
    ("<think>x</think><action>click[buy now]</action>", SHOP, False, True, "click[buy now]"),
    ("<think>x</think><action>click[< prev]</action>", SHOP, False, True, "click[< prev]"),
    ("<think>x</think><action>click[next >]</action>", SHOP, False, False, "click[next >]"),
    ("\x00\xff\xfe<think>a</think><action>up</action>", MOVES, True, False, "up"),
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xd8", MOVES, True, False, None),
    # bytes are outside the action space (arlarena_envs.base.coerce_action): no action
    (b"<think>ok</think><action>up</action>", MOVES, True, False, None),
    (None, MOVES, True, False, None),
    ("<think>" + "a" * MAX_RESPONSE_CHARS + "</think><action>up</action>",
     MOVES, True, False, None),
    ("<think>" + "plan " * 1000 + "</think><action>up</action>", MOVES, True, True, "up"),
    ("<think>a</think><action>Up</action>", MOVES, False, False, "Up"),
]


# The study's verdicts: (response, format_ok = its is_action_valid, the action its env executes).
# They are what the study's projections return on these responses: ALFWorld,
# agent_system/environments/env_package/alfworld/projection.py:19-81 (strict regex line 29,
# tag counts 32-45, CJK U+4E00-9FFF line 40, pool check 60-62, fallback to the last 30
# characters 38 and 77); WebShop, env_package/webshop/projection.py:66-122 (the same without the
# pool, line 105); Sokoban, env_package/sokoban/projection.py:22-85 (lower-cased find of the
# tags 48-54, the first of up/down/left/right/still in the content 36-42 and 64-69, Still when
# none 58 and 73, <think> and </think> found as written 80-83).
ROOM = ["go to desk 1", "take mug 1 from desk 1", "look"]
ALFWORLD = [
    ("<think>go</think><action>go to desk 1</action>", True, "go to desk 1"),
    ("<think>x</think><action>Go To Desk 1</action>", True, "go to desk 1"),
    ("  <think>a</think>\n<action> look </action>\n", True, "look"),
    ("<THINK>a</THINK><ACTION>Look</ACTION>", True, "look"),
    ("<think>x</think><action>go to desk 2</action>", False, "go to desk 2"),
    ("<think>a</think><action></action>", False, ""),
    ("<think>x</think>Then <action>look</action>", False, "look"),
    ("<action>look</action>", False, "look"),
    ("<think>a</think><action>look</action><action>go to desk 1</action>", False, "look"),
    ("< think >a</think><action>look</action>", False, "look"),
    ("<think>a</think>< action >LOOK</ action >", False, "look"),
    ("<think>桌子</think><action>look</action>", False, "look"),
    ("<think>a，b</think><action>look</action>", True, "look"),
    ("<think>これは</think><action>look</action>", True, "look"),
    ("<think>상자</think><action>look</action>", True, "look"),
    ("I will Look Around the room now, carefully.", False, "round the room now, carefully."),
    ("<think>go to desk 1", False, "<think>go to desk 1"),
    ("", False, ""),
]
SHOP = ["search[<your query>]", "click[buy now]"]
WEBSHOP = [
    ("<think>x</think><action>search[Red Shoes]</action>", True, "search[red shoes]"),
    ("<think>x</think><action>click[Next >]</action>", True, "click[next >]"),
    ("<think>x</think><action>click[B07XYZ1234]</action>", True, "click[b07xyz1234]"),
    ("<think>x</think><action>fly away</action>", True, "fly away"),
    ("<think>x</think><action>click[buy now]</action> ok", False, "click[buy now]"),
    ("<think>红色</think><action>click[buy now]</action>", False, "click[buy now]"),
    ("<think>a，b</think><action>click[Buy Now]</action>", True, "click[buy now]"),
    ("No tags here: I would Click Buy Now right away.", False, "ould Click Buy Now right away."),
]
SOKOBAN = [
    ("<think>a</think><action>up</action>", True, "up"),
    ("<think>a</think><action>move up</action>", True, "up"),
    ("<think>a</think><ACTION>RIGHT</ACTION>", True, "right"),
    ("<think>a</think><action>Left</action>", True, "left"),
    ("<think>a</think><action>still</action>", True, "still"),
    ("<think>a</think><action>right, then up</action>", True, "up"),
    ("<think>a</think><action>upward</action>", True, "up"),
    ("<think>a</think> so <action>left</action> done", True, "left"),
    ("</think><think><action>down</action>", True, "down"),
    ("<think>上</think><action>up</action>", True, "up"),
    ("<think>a</think><action>jump</action>", False, "still"),
    ("<action>down</action>", False, "down"),
    ("<THINK>a</THINK><action>down</action>", False, "down"),
    ("</action><think>a</think><action>up", False, "still"),
    ("<think>a</think><action>up", False, "still"),
    ("I go up", False, "still"),
]
STUDY_CASES = (
    [("alfworld", ROOM, *case) for case in ALFWORLD]
    + [("webshop", SHOP, *case) for case in WEBSHOP]
    + [("sokoban", ["up", "down", "left", "right"], *case) for case in SOKOBAN]
)


@pytest.mark.parametrize(("check", "admissible", "response", "ok", "executed"), STUDY_CASES)
def test_the_studys_checks(check, admissible, response, ok, executed):
    parsed, action = FORMAT_CHECKS[check](response, admissible)
    assert (parsed.format_ok, action) == (ok, executed), parsed.error
    assert (parsed.error is None) is ok


def test_every_check_gives_hostile_input_a_verdict():
    hostile = [
        "<action>" * 200_000,
        "<think>" + "</think>" * 200_000 + "<action>" * 100_000,
        "<think>a</think><action>" + "x</action>" * 100_000,
        "\xff\xfe<think>a</think><action>up</action>",
        None,
        "\x00" * 1_000_000,
        b"<think>a</think><action>up</action>",  # outside the action space: no action
    ]
    for name, check in FORMAT_CHECKS.items():
        verdicts = [check(response, ["up"]) for response in hostile]
        loose = name == "sokoban"  # only it ignores text before <think>
        assert [parsed.format_ok for parsed, _ in verdicts] == [False] * 3 + [loose] + [False] * 3
        assert all(isinstance(action, str) for _, action in verdicts), name


@pytest.mark.parametrize(("response", "admissible", "lowercase", "ok", "action"), CASES)
def test_strict_format_check(response, admissible, lowercase, ok, action):
    parsed = parse_response(response, admissible, lowercase=lowercase)
    assert parsed.format_ok is ok, parsed.error
    assert parsed.action == action
    assert (parsed.error is None) is ok


def test_there_are_at_least_thirty_cases():
    assert len(CASES) >= 30
    assert {ok for *_, ok, _ in CASES} == {True, False}


def test_huge_inputs_return_quickly_with_a_verdict():
    junk = "</think>" * 200_000 + "<action>" * 100_000
    assert not parse_response(junk, MOVES).format_ok
    megabyte = "<think>" + "x" * 1_000_000 + "</think><action>up</action>"
    parsed = parse_response(megabyte, MOVES)
    assert not parsed.format_ok and "longer" in parsed.error


def test_cjk_detection_covers_scripts_and_spares_latin():
    assert contains_cjk("中") and contains_cjk("カ") and contains_cjk("한") and contains_cjk("，")
    assert not contains_cjk("café naïve √ ← ∑ Ω")


def test_template_entries_admit_free_text_only_inside_brackets():
    assert is_admissible("search[anything at all]", SHOP)
    assert not is_admissible("search anything", SHOP)
    assert not is_admissible("find[shoes]", SHOP)
