"""The strict format check of prompts.md, case by case."""

from __future__ import annotations

import pytest

from wrappers.format import MAX_RESPONSE_CHARS, contains_cjk, is_admissible, parse_response

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
    (b"<think>ok</think><action>up</action>", MOVES, True, True, "up"),
    (None, MOVES, True, False, None),
    ("<think>" + "a" * MAX_RESPONSE_CHARS + "</think><action>up</action>",
     MOVES, True, False, None),
    ("<think>" + "plan " * 1000 + "</think><action>up</action>", MOVES, True, True, "up"),
    ("<think>a</think><action>Up</action>", MOVES, False, False, "Up"),
]


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
