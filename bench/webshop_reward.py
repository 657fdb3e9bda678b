"""WebShop reward fidelity: ARLArena's scorer against the original ``goal.py``, same purchases.

**Type factor** (needs spaCy and an English model, ``$ARLARENA_SPACY_MODEL``): on the distinct
titles of the 10k shop, how often the rule tagger gives spaCy's noun list, and how often the
type factor agrees on title pairs (for 2,000 goal products: 3 products of the same query and 3
of the same category each).

**Scores** (with ``--webshop DIR``, DIR a checkout of princeton-nlp/WebShop): its
``web_agent_site/engine/goal.py`` and ``normalize.py`` are imported from there (they need
``thefuzz``, ``rich`` and spaCy with an English model; the study pins thefuzz 0.19.0 with
python-Levenshtein). ``--finer FILE`` adds upstream's revision 6ba9969 of
``goal.py`` (``git -C DIR show 6ba9969:web_agent_site/engine/goal.py > FILE``), compared with
``reward="finer"``. ``$ARLARENA_SPACY_MODEL`` (a name or path) is the model both sides load.

On the 1k generated shop it draws purchases of six kinds per goal (the target with the goal's
options; a wrong product of the same query, and one from the whole shop, with random options;
the target with random options; the target over the price bound; the target with no options),
scores each with both, and prints per kind how often the scores agree exactly and how often
the win (score 1.0) agrees. ARLArena's type factor uses whichever tagger
:func:`~arlarena_envs.webshop.nouns.noun_tagger` reports (spaCy's, or the rules with
``ARLARENA_NOUN_TAGGER=rules``): with spaCy on both sides any difference is the option rule's.
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

KINDS = ("target", "wrong product (same query)", "wrong product (any)", "wrong options",
         "over price", "no options")


def load_original(webshop: Path, finer: Path | None) -> dict[str, Callable[..., Any]]:
    """The original ``get_reward`` functions, by ARLArena rule name."""
    import os

    import spacy

    model = os.environ.get("ARLARENA_SPACY_MODEL")
    if model:  # the original loads "en_core_web_sm" by name
        spacy_load = spacy.load
        spacy.load = lambda _name, **kw: spacy_load(model, **kw)
    sys.path.insert(0, str(webshop))
    from web_agent_site.engine import goal  # type: ignore[import-not-found]

    rules = {"study": goal.get_reward}
    if finer is not None:
        spec = importlib.util.spec_from_file_location("webshop_goal_6ba9969", finer)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        rules["finer"] = module.get_reward
    return rules


def _product_dict(product: Any) -> dict[str, Any]:
    return {
        "query": product.query, "product_category": product.product_category,
        "name": product.title, "Title": product.title, "Attributes": list(product.attributes),
        "BulletPoints": list(product.bullets) or [""], "Description": product.description,
    }


def _goal_dict(goal: Any) -> dict[str, Any]:
    synthetic = all(name for name, _ in goal.options)
    return {
        "query": goal.query, "product_category": goal.product_category, "name": goal.name,
        "attributes": list(goal.attributes),
        "goal_options": dict(goal.options) if synthetic else list(goal.option_values),
        "price_upper": 1000000 if goal.price_upper is None else goal.price_upper,
    }


Purchase = tuple[str, Any, Any, dict[str, str], float]


def purchases(shop: Any, goals: int, seed: int) -> list[Purchase]:
    """``(kind, goal, product, options, price)`` for ``goals`` goals drawn with ``seed``."""
    rng = random.Random(seed)
    by_query: dict[str, list[Any]] = {}
    for product in shop.products:
        by_query.setdefault(product.query, []).append(product)

    def random_options(product: Any) -> dict[str, str]:
        return {name: rng.choice(values) for name, values in product.options.items()}

    drawn = []
    for index in rng.sample(range(len(shop.goals)), goals):
        goal = shop.goals[index]
        target = shop.product(goal.asin)
        own = dict(goal.options)
        same = [p for p in by_query[goal.query] if p.asin != target.asin] or [target]
        other = rng.choice(same)
        anyone = rng.choice(shop.products)
        over = (goal.price_upper or target.price) + 1.0
        drawn += [
            ("target", goal, target, own, target.price),
            ("wrong product (same query)", goal, other, random_options(other), other.price),
            ("wrong product (any)", goal, anyone, random_options(anyone), anyone.price),
            ("wrong options", goal, target, random_options(target), target.price),
            ("over price", goal, target, own, over),
            ("no options", goal, target, {}, target.price),
        ]
    return drawn


def tagger_agreement(seed: int) -> None:
    """Print how closely the rule tagger follows spaCy (module docs)."""
    from arlarena_envs.webshop.catalogue import DEFAULT_PRODUCTS
    from arlarena_envs.webshop.nouns import noun_tagger, rule_nouns, title_nouns
    from arlarena_envs.webshop.reward import type_reward
    from arlarena_envs.webshop.schema import Goal
    from arlarena_envs.webshop.shop import ShopConfig, get_shop

    if not noun_tagger().startswith("spacy:"):
        print("type factor: skipped (spaCy or its English model is not installed)")
        return
    products = get_shop(ShopConfig(DEFAULT_PRODUCTS)).products
    titles = sorted({p.title for p in products})
    same = sum(rule_nouns(t) == title_nouns(t) for t in titles)
    rng = random.Random(seed)
    by_query: dict[str, list[Any]] = {}
    by_category: dict[str, list[Any]] = {}
    for product in products:
        by_query.setdefault(product.query, []).append(product)
        by_category.setdefault(product.category, []).append(product)
    pairs = []
    for target in rng.sample(list(products), 2000):
        goal = Goal(0, target.asin, target.category, target.query, target.title,
                    target.product_category, "", (), (), None)
        pairs += [(goal, rng.choice(by_query[target.query])) for _ in range(3)]
        pairs += [(goal, rng.choice(by_category[target.category])) for _ in range(3)]
    agree = sum(
        type_reward(p, g).r_type == type_reward(p, g, nouns=rule_nouns).r_type for g, p in pairs
    )
    print(f"type factor, rules vs {noun_tagger()}: the same noun list on {same / len(titles):.1%} "
          f"of {len(titles)} titles; the same r_type on {agree / len(pairs):.1%} of "
          f"{len(pairs)} title pairs")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--webshop", type=Path, default=None, help="a WebShop checkout")
    parser.add_argument("--finer", type=Path, default=None, help="goal.py of revision 6ba9969")
    parser.add_argument("--goals", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    from arlarena_envs.webshop.catalogue import SMALL_PRODUCTS
    from arlarena_envs.webshop.nouns import noun_tagger
    from arlarena_envs.webshop.reward import score_purchase
    from arlarena_envs.webshop.shop import ShopConfig, get_shop

    tagger_agreement(args.seed)
    if args.webshop is None:
        return 0
    originals = load_original(args.webshop, args.finer)
    shop = get_shop(ShopConfig(SMALL_PRODUCTS))
    drawn = purchases(shop, args.goals, args.seed)
    print(f"ARLArena's noun tagger: {noun_tagger()}; {args.goals} goals of the 1k shop, "
          f"{len(drawn)} purchases")
    for rule, original in originals.items():
        same, wins_same, count, ours_won, theirs_won = (Counter() for _ in range(5))
        for kind, goal, product, options, price in drawn:
            ours = score_purchase(product, goal, options, price=price, rule=rule).score
            theirs = original(_product_dict(product), _goal_dict(goal), price, options)
            count[kind] += 1
            same[kind] += abs(ours - theirs) < 1e-9
            wins_same[kind] += (ours == 1.0) == (theirs == 1.0)
            ours_won[kind] += ours == 1.0
            theirs_won[kind] += theirs == 1.0
        print(f"\nreward={rule!r}: kind | same score | same win | wins ours / original")
        for kind in KINDS:
            n = count[kind]
            print(f"  {kind:28s} | {same[kind] / n:7.1%} | {wins_same[kind] / n:7.1%} | "
                  f"{ours_won[kind]} / {theirs_won[kind]} of {n}")
        total = sum(count.values())
        print(f"  {'all':28s} | {sum(same.values()) / total:7.1%} | "
              f"{sum(wins_same.values()) / total:7.1%} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
