"""WebShopEnv in-process: page texts and flow, admissible actions, invalid input, the expert,
determinism, the Gymnasium checker, the prompt wrapper, and the original-data path."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import arlarena_envs  # noqa: F401  (registers the ids)
from arlarena_envs.webshop.catalogue import SMALL_PRODUCTS
from arlarena_envs.webshop.env import SEARCH_ENTRY, WIN_REWARD, WebShopEnv
from arlarena_envs.webshop.nouns import noun_tagger
from arlarena_envs.webshop.reward import COLORS
from arlarena_envs.webshop.schema import Goal, Product
from arlarena_envs.webshop.shop import ShopConfig, get_shop
from arlarena_envs.webshop.urls import parse_location
from wrappers.prompt import PromptWrapper

SMALL_ID = "ARLArena/WebShop-Small-v0"


@pytest.fixture(scope="module")
def env() -> WebShopEnv:
    return gym.make(SMALL_ID).unwrapped


def _clicks(info: dict[str, Any]) -> list[str]:
    return [a[6:-1] for a in info["admissible_actions"] if a.startswith("click[")]


def _goal(env: WebShopEnv) -> dict[str, Any]:
    return env.client.api(f"/api/sessions/{env.session_id}")["goal"]


def _play_expert(env: gym.Env, limit: int = 15) -> tuple[float, dict[str, Any], int]:
    total, info, steps = 0.0, {}, 0
    for steps in range(1, limit + 1):  # noqa: B007
        action = env.unwrapped.expert_action()
        assert action is not None
        _, reward, terminated, truncated, info = env.step(action)
        total += reward
        if terminated or truncated:
            break
    return total, info, steps


def test_registration_and_turn_limit() -> None:
    spec = gym.spec(SMALL_ID)
    assert spec.max_episode_steps == 15 and spec.kwargs == {"products": SMALL_PRODUCTS}
    assert gym.spec("ARLArena/WebShop-v0").max_episode_steps == 15
    assert WebShopEnv.prompt_template == "webshop" and WebShopEnv.lowercase_actions is False


def test_search_page_text_and_admissible_actions(env: WebShopEnv) -> None:
    obs, info = env.reset(seed=3, options={"split": "eval"})
    task = info["task"]
    assert info["anchor"] == f"WebShop [SEP] Instruction: [SEP] {task} [SEP] Search"
    # The agent view: the instruction on a line, then the page after it, each element quoted.
    assert obs == f"Instruction: {task}\n'Search'"
    assert info["admissible_actions"] == [SEARCH_ENTRY, "click[search]"]  # as the original
    assert info["won"] is False and info["score"] == 0.0 and "action_is_valid" not in info
    assert (info["reward_rule"], info["pages"], info["noun_tagger"]) == (
        "study", "original", noun_tagger()
    )
    # The original lists its search button; clicking it does nothing.
    obs_after, reward, _, _, after = env.step("click[Search]")
    assert (obs_after, after["anchor"], reward) == (obs, info["anchor"], 0.0)
    assert after["action_is_valid"]
    assert info["task_type"] in {"beauty", "electronics", "fashion", "furniture", "grocery"}
    assert re.search(r"price lower than \d+\.\d\d dollars$", task)


def test_results_item_and_sub_pages_flow(env: WebShopEnv) -> None:
    _, info = env.reset(seed=0, options={"split": "eval", "index": 5})
    task = info["task"]
    _, reward, terminated, _, info = env.step("search[long lasting shampoo]")
    assert info["action_is_valid"] and reward == 0.0 and not terminated
    page1 = info["anchor"]
    assert re.match(
        rf"Instruction: \[SEP\] {re.escape(task)} \[SEP\] Back to Search \[SEP\] "
        r"Page 1 \(Total results: 50\) \[SEP\] Next > \[SEP\] B0[0-9A-Z]{8} \[SEP\] ", page1
    )
    clicks = _clicks(info)
    assert clicks[:2] == ["back to search", "next >"] and len(clicks) == 12
    assert info["admissible_actions"][0] == "click[back to search]"  # no search bar here
    asins = clicks[2:]

    _, _, _, _, info = env.step("click[next >]")
    assert "Page 2 (Total results: 50) [SEP] < Prev [SEP] Next >" in info["anchor"]
    assert set(_clicks(info)[3:]).isdisjoint(asins)
    _, _, _, _, info = env.step("click[< prev]")
    assert info["anchor"] == page1

    _, _, _, _, info = env.step(f"click[{asins[0].upper()}]")  # labels match in any case
    assert info["action_is_valid"] and info["page"] == "item"
    product = get_shop(ShopConfig(SMALL_PRODUCTS)).product(asins[0])
    clicks = _clicks(info)
    options = [v for values in product.options.values() for v in values]
    assert clicks == [
        "back to search", "< prev", "description", "features", "reviews", "buy now", *options,
    ]
    # The original shows the listed price tag and never loads ratings.
    shown = f"[SEP] {product.title} [SEP] Price: {product.price_tag} [SEP] Rating: N.A. [SEP] "
    assert shown in info["anchor"]
    assert info["anchor"].endswith("Description [SEP] Features [SEP] Reviews [SEP] Buy Now")

    if options:
        env.step(f"click[{options[-1]}]")
        assert parse_location(env.client.url).options == {
            list(product.options)[-1]: options[-1]
        }
    _, _, _, _, info = env.step("click[description]")
    assert info["anchor"].endswith(f"Back to Search [SEP] < Prev [SEP] {product.description}")
    _, _, _, _, info = env.step("click[< prev]")
    assert info["page"] == "item"
    if options:  # the sub-page returns to the item with the options kept
        assert parse_location(env.client.url).options
    _, _, _, _, info = env.step("click[features]")
    assert info["anchor"].endswith(" [SEP] ".join(product.bullets))
    env.step("click[< prev]")
    _, _, _, _, info = env.step("click[reviews]")  # empty, as the original's
    assert info["anchor"].endswith("Back to Search [SEP] < Prev")
    env.step("click[< prev]")
    _, _, _, _, info = env.step("click[< prev]")  # item -> the results page it came from
    assert info["anchor"] == page1
    env.step(f"click[{asins[0]}]")
    assert parse_location(env.client.url).options == {}  # options cleared
    _, _, _, _, info = env.step("click[back to search]")
    assert info["admissible_actions"][0] == SEARCH_ENTRY and info["page"] == "search"


@pytest.mark.parametrize(
    "action",
    [
        None, b"\xff\xfe\x00", 12345, "", "   ", "search", "search[]", "search[   ]",
        "click[", "click[nothing like this]", "click[buy now]", "Search[shampoo]",
        "search[\u200b\u2060]", "search[" + "a" * 1_000_000 + "]", "x" * 2_000_000,
    ],
    ids=lambda a: repr(a)[:24],
)
def test_invalid_actions_change_nothing(env: WebShopEnv, action: Any) -> None:
    obs, info = env.reset(seed=11)
    before = (obs, info["anchor"], env.client.url)
    obs, reward, terminated, truncated, info = env.step(action)
    assert info["action_is_valid"] is False
    assert (obs, info["anchor"], env.client.url) == before
    assert reward == 0.0 and not terminated and not truncated


def test_search_works_from_any_page_but_is_listed_on_the_search_page(env: WebShopEnv) -> None:
    env.reset(seed=1)
    _, _, _, _, info = env.step("search[red socks]")
    assert SEARCH_ENTRY not in info["admissible_actions"]
    asin = _clicks(info)[2]
    _, _, _, _, info = env.step(f"click[{asin}]")
    _, _, _, _, info = env.step("search[blue jeans]")  # from an item page, as the original
    assert info["action_is_valid"] and info["page"] == "results"
    assert parse_location(env.client.url).keywords == "blue jeans"


def _ranged(shop: Any) -> Any:
    return next(p for p in shop.products if " - " in p.pricing and p.title)


def test_ranged_listing_shows_its_price_tag(env: WebShopEnv) -> None:
    product = _ranged(get_shop(ShopConfig(SMALL_PRODUCTS)))
    low, high = (float(x) for x in product.pricing.replace("$", "").split(" - "))
    assert product.price_tag == f"${low} to ${high}" and low <= product.price <= high
    env.reset(seed=0)
    _, _, _, _, info = env.step(f"search[{product.title}]")
    assert f"{product.asin} [SEP] {product.title} [SEP] ${low} to ${high}" in info["anchor"]
    _, _, _, _, info = env.step(f"click[{product.asin}]")
    assert f"[SEP] Price: ${low} to ${high} [SEP] Rating: N.A. [SEP]" in info["anchor"]


def test_extended_pages_show_the_generated_extras() -> None:
    env = WebShopEnv(products=SMALL_PRODUCTS, pages="extended")
    shop = get_shop(ShopConfig(SMALL_PRODUCTS))
    product = next(p for p in shop.products if p.reviews and " - " in p.pricing)
    env.reset(seed=0)
    _, _, _, _, info = env.step(f"search[{product.title}]")
    assert info["pages"] == "extended"
    assert f"{product.asin} [SEP] {product.title} [SEP] ${product.price:.2f}" in info["anchor"]
    _, _, _, _, info = env.step(f"click[{product.asin}]")
    assert f"Price: ${product.price:.2f} [SEP] Rating: {product.rating} [SEP]" in info["anchor"]
    _, _, _, _, info = env.step("click[reviews]")
    assert info["anchor"].endswith(product.reviews[-1].body)
    with pytest.raises(ValueError, match="pages must be one of"):
        WebShopEnv(products=SMALL_PRODUCTS, pages="rich")
    with pytest.raises(ValueError, match="reward must be one of"):
        WebShopEnv(products=SMALL_PRODUCTS, reward="values")


def _target_score(goal: Goal, product: Product, rule: str) -> float:
    """The score of the goal's own product bought with the goal's options, from what the rules
    say (``arlarena_envs/webshop/reward.py``'s docs), not from the scorer: the same title and
    query give type factor 1, and every attribute (the goal's are the product's) and the price
    match. Under ``"finer"`` every option matches; under ``"study"`` an option matches unless
    colour normalisation turns its value into a colour word that is not one of its words
    ("standard" -> "tan", "sandalwood" -> "sand"), which never matches its own goal."""
    assert (product.title, product.query) == (goal.name, goal.query)
    assert set(goal.attributes) <= set(product.attributes) and product.price <= goal.price_upper

    def matches(value: str) -> bool:
        colour = next((c for c in COLORS if c in value), None)
        return rule == "finer" or colour is None or colour in re.findall(r"[a-z0-9]+", value)

    options = sum(matches(value) for _, value in goal.options)
    return (len(goal.attributes) + options + 1) / (len(goal.attributes) + len(goal.options) + 1)


@pytest.mark.parametrize("reward", ["study", "finer"])
def test_expert_buys_the_target_with_the_goals_options(reward: str) -> None:
    env = WebShopEnv(products=SMALL_PRODUCTS, reward=reward)
    shop = get_shop(ShopConfig(SMALL_PRODUCTS))
    scores = []
    for index in range(0, 1000, 50):
        _, info = env.reset(options={"split": "eval", "index": index})
        goal = shop.goal("eval", index)
        score = _target_score(goal, shop.product(goal.asin), reward)
        scores.append(score)
        total, info, steps = _play_expert(env)
        assert info["score"] == score and info["won"] is (score == 1.0), info
        assert total == (WIN_REWARD if score == 1.0 else 0.0) and info["reward_rule"] == reward
        assert steps <= 8 and info["page"] == "done" and info["admissible_actions"] == []
        assert info["anchor"].startswith("Thank you for shopping with us! [SEP] Instruction:")
        assert info["anchor"].endswith(f"Your score (min 0.0, max 1.0) [SEP] {score}")
        assert env.expert_action() is None
        # After the purchase nothing more happens.
        _, reward_after, terminated, _, info = env.step("click[back to search]")
        assert (reward_after, terminated, info["action_is_valid"]) == (0.0, True, False)
    # The finer rule wins every goal; the study's loses an option on 3 of these 20.
    assert sum(score < 1.0 for score in scores) == (0 if reward == "finer" else 3)


def test_a_wrong_purchase_scores_partially_without_the_win_reward(env: WebShopEnv) -> None:
    _, info = env.reset(options={"split": "eval", "index": 7})
    goal = _goal(env)
    env.step(f"search[{goal['name']}]")
    env.step(f"click[{goal['asin'].lower()}]")
    _, reward, terminated, _, info = env.step("click[buy now]")  # no option chosen
    assert terminated and reward == 0.0 and not info["won"]
    expected = (len(goal["attributes"]) + 1) / (len(goal["attributes"]) + len(goal["options"]) + 1)
    assert info["score"] == pytest.approx(expected)


def test_same_seed_same_task_and_splits_pick_goals(env: WebShopEnv) -> None:
    other = gym.make(SMALL_ID)
    for seed in (0, 1, 2):
        obs_a, info_a = env.reset(seed=seed)
        obs_b, info_b = other.reset(seed=seed)
        assert (obs_a, info_a) == (obs_b, info_b)
    tasks = {env.reset(seed=s)[1]["task"] for s in range(10)}
    assert len(tasks) >= 9
    shop = get_shop(ShopConfig(SMALL_PRODUCTS))
    for split in ("train", "eval", "test"):
        _, info = env.reset(options={"split": split, "index": 4})
        assert info["task"] == shop.goal(split, 4).instruction
    with pytest.raises(ValueError, match="split"):
        env.reset(options={"split": "dev"})


def test_gymnasium_checker_passes(env: WebShopEnv) -> None:
    check_env(env)


def test_prompt_wrapper_lists_actions_and_checks_as_the_study() -> None:
    wrapped = PromptWrapper(gym.make(SMALL_ID))
    prompt, info = wrapped.reset(seed=0)
    assert prompt.startswith("\nYou are an expert autonomous agent operating in the WebShop")
    assert "'search[<your query>]'," in prompt and info["task"] in prompt
    _, reward, _, _, info = wrapped.step("<think>go</think><action>search[Red Shampoo]</action>")
    assert info["format_ok"] and info["parsed_action"] == "search[red shampoo]" and reward == 0.0
    assert info["action_is_valid"]
    # The study's WebShop check is the format only: an unknown click costs no penalty.
    _, reward, _, _, info = wrapped.step("<think>x</think><action>click[nowhere]</action>")
    assert info["format_ok"] and not info["action_is_valid"] and reward == 0.0
    strict = PromptWrapper(gym.make(SMALL_ID), format_check="strict")  # ARLArena's: case kept
    strict.reset(seed=0)
    _, _, _, _, info = strict.step("<think>go</think><action>search[Red Shampoo]</action>")
    assert info["format_ok"] and info["parsed_action"] == "search[Red Shampoo]"
    _, reward, _, _, info = strict.step("<think>x</think><action>click[nowhere]</action>")
    assert not info["format_ok"] and reward == pytest.approx(-0.1)


def test_text_observation_mode_and_render() -> None:
    env = WebShopEnv(products=SMALL_PRODUCTS, observation_mode="text", render_mode="ansi")
    obs, info = env.reset(seed=0)
    assert obs == info["anchor"] == env.render()
    with pytest.raises(ValueError):
        WebShopEnv(products=SMALL_PRODUCTS, observation_mode="html")


def test_default_catalogue_env(env: WebShopEnv) -> None:
    big = gym.make("ARLArena/WebShop-v0")
    shop = get_shop(ShopConfig())
    assert len(shop.products) >= 10_000 and len(shop.describe()["categories"]) >= 5
    for index in (0, 1, 2):
        big.reset(options={"split": "eval", "index": index})
        _, info, _ = _play_expert(big)
        assert info["won"]


def test_env_over_original_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    products = [
        {
            "asin": f"B07TEST{i:03d}",
            "category": "beauty",
            "query": "shampoo",
            "name": f"Brand{i} Shampoo for Hair",
            "product_category": "Beauty & Personal Care › Hair Care › Shampoos",
            "full_description": "Gentle.",
            "small_description": ["Sulfate free"],
            "pricing": "$12.00",
            "customization_options": {"Size": [{"value": "8 oz"}, {"value": "16 oz"}]},
        }
        for i in range(30)
    ]
    (tmp_path / "items_shuffle_1000.json").write_text(json.dumps(products))
    attributes = {p["asin"]: {"attributes": ["sulfate free"]} for p in products}
    (tmp_path / "items_ins_v2_1000.json").write_text(json.dumps(attributes))
    monkeypatch.setenv("ARLARENA_WEBSHOP_DATA", str(tmp_path))
    env = WebShopEnv(products=SMALL_PRODUCTS)
    shop = get_shop(ShopConfig(SMALL_PRODUCTS, data_dir=str(tmp_path)))
    assert len(shop.products) == 30 and len(shop.goals) == 60
    env.reset(options={"split": "train", "index": 0})
    _, info, _ = _play_expert(env)
    assert info["won"]
