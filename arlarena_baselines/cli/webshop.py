"""``arlarena webshop``: serve the WebShop application, or build its caches ahead of time.

``arlarena webshop serve --port 3000`` serves the shop (a person opens http://127.0.0.1:3000/;
agents point ``WebShopEnv(server_url=…)`` at it); ``arlarena webshop build`` builds the
catalogue and search index once so later starts load the index from the cache.
"""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from arlarena_envs.webshop.shop import ShopConfig

__all__ = ["register"]


def _add_shop_options(parser: argparse.ArgumentParser) -> None:
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--products", type=int, default=None,
                      help="catalogue size (default 10000 generated; all original products)")
    size.add_argument("--small", action="store_true",
                      help="the study's small catalogue: 1000 products")
    parser.add_argument("--catalogue-seed", type=int, default=0,
                        help="seed of the generated catalogue, its goals and splits")
    parser.add_argument("--data-dir", default=None,
                        help="folder with the original WebShop files (items_shuffle*.json, "
                             "items_ins_v2*.json); default $ARLARENA_WEBSHOP_DATA, else generate")
    parser.add_argument("--human-goals", action="store_true",
                        help="with --data-dir: use the human instructions as goals")


def _config(args: argparse.Namespace) -> ShopConfig:
    # Imports are deferred so that ``arlarena --help`` does not load the shop.
    from arlarena_envs.webshop.catalogue import SMALL_PRODUCTS
    from arlarena_envs.webshop.shop import ShopConfig

    products = SMALL_PRODUCTS if args.small else args.products
    return ShopConfig(products, args.catalogue_seed, args.data_dir, args.human_goals)


def _serve(args: argparse.Namespace) -> int:
    from arlarena_envs.webshop.server import serve

    serve(_config(args), host=args.host, port=args.port, quiet=not args.verbose,
          reward=args.reward, pages=args.pages)
    return 0


def _build(args: argparse.Namespace) -> int:
    from arlarena_envs.webshop.cache import cache_dir
    from arlarena_envs.webshop.shop import get_shop

    start = time.perf_counter()
    info = get_shop(_config(args)).describe()
    print(
        f"{info['products']} products, {info['goals']} goals, splits {info['splits']}; "
        f"ready in {time.perf_counter() - start:.1f} s (cache: {cache_dir()})"
    )
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``webshop serve`` and ``webshop build``."""
    parser = subparsers.add_parser("webshop", help="serve the WebShop application")
    commands = parser.add_subparsers(dest="webshop_command", required=True, metavar="ACTION")

    serve = commands.add_parser("serve", help="serve the shop over HTTP (threaded)")
    _add_shop_options(serve)
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=3000, help="port (0 picks a free one)")
    serve.add_argument("--verbose", action="store_true", help="log every request")
    serve.add_argument("--reward", choices=("study", "finer"), default="study",
                       help="option rule: the study's scorer (default) or upstream's 6ba9969")
    serve.add_argument("--pages", choices=("original", "extended"), default="original",
                       help="pages as the original's (default) or with generated ratings, "
                            "reviews and exact prices")
    serve.set_defaults(func=_serve)

    build = commands.add_parser("build", help="build the catalogue and search index caches")
    _add_shop_options(build)
    build.set_defaults(func=_build)
