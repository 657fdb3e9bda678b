"""The shop as a Flask application: HTML pages for people and agents, plus a small JSON API.

Holds :func:`create_app` (pages: search, results with "< Prev" / "Next >", item with options and
Description / Features / Reviews, "Buy Now", the done page with the score; the URL scheme of
:mod:`~arlarena_envs.webshop.urls`) and :func:`get_app` (one app per shop and settings in a
process, so in-process envs share its session store). Two settings: ``reward``, the option rule
of :data:`~arlarena_envs.webshop.reward.REWARD_RULES` that scores purchases, and ``pages``:
``"original"`` (default) shows what the original's pages show (the listed price tag, "$a to
$b" for a range, on results and item pages; "Rating: N.A."; an empty Reviews page), while
``"extended"`` adds what ARLArena generates (the exact charged price, ratings and reviews).
JSON: ``/api/shop`` (sizes, splits, settings, noun tagger) and ``/api/sessions/<sid>`` (a
session's goal and purchase: privileged, for the env's score and expert). Templates and the
stylesheet live in ``data/`` inside the package.
"""

from __future__ import annotations

import secrets
import threading
from pathlib import Path
from typing import Any

from flask import Flask, abort, jsonify, redirect, render_template, request
from werkzeug.wrappers import Response

from arlarena_envs.webshop.nouns import noun_tagger
from arlarena_envs.webshop.reward import DEFAULT_REWARD, check_reward
from arlarena_envs.webshop.schema import Product, format_price
from arlarena_envs.webshop.sessions import Session, SessionStore
from arlarena_envs.webshop.shop import Shop
from arlarena_envs.webshop.urls import (
    SESSION_ID,
    SUB_PAGES,
    buy_url,
    decode_options,
    done_url,
    encode_options,
    item_url,
    results_url,
    search_url,
)

__all__ = [
    "DEFAULT_PAGES",
    "MAX_KEYWORDS_CHARS",
    "PAGE_STYLES",
    "PRODUCTS_PER_PAGE",
    "check_pages",
    "create_app",
    "get_app",
]

PAGE_STYLES = ("original", "extended")
"""What the pages show: the original's fields, or with ARLArena's generated extras."""
DEFAULT_PAGES = "original"
PRODUCTS_PER_PAGE = 10
MAX_KEYWORDS_CHARS = 500
_MAX_PAGE = 1000
_DATA = Path(__file__).parent / "data"


def _session_id(sid: str) -> str:
    if not SESSION_ID.fullmatch(sid):
        abort(404)
    return sid


def _keywords() -> str:
    return " ".join(request.args.get("keywords", "").split())[:MAX_KEYWORDS_CHARS]


def _page_number() -> int:
    try:
        return min(max(1, int(request.args.get("page", "1"))), _MAX_PAGE)
    except ValueError:
        return 1


def _valid_options(product: Product, options: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in options.items() if v in product.options.get(k, ())}


def check_pages(pages: str) -> str:
    """``pages`` if it names a style of :data:`PAGE_STYLES`, else a ``ValueError``."""
    if pages not in PAGE_STYLES:
        raise ValueError(f"pages must be one of {PAGE_STYLES}, got {pages!r}")
    return pages


def create_app(
    shop: Shop,
    store: SessionStore | None = None,
    *,
    reward: str = DEFAULT_REWARD,
    pages: str = DEFAULT_PAGES,
) -> Flask:
    """A Flask app serving ``shop``; sessions live in ``store`` (a new one, scoring with
    ``reward``, by default); ``pages`` is the page style (module docs)."""
    extended = check_pages(pages) == "extended"
    app = Flask(
        __name__,
        template_folder=str(_DATA / "templates"),
        static_folder=str(_DATA / "static"),
    )
    app.config["MAX_CONTENT_LENGTH"] = 64 * 1024
    sessions = store or SessionStore(shop, reward=check_reward(reward))
    app.extensions["webshop"] = sessions

    def shown_price(product: Product) -> str:
        return format_price(product.price) if extended else product.price_tag

    def page(template: str, session: Session, kind: str, **context: Any) -> str:
        return render_template(
            template, sid=session.sid, page_kind=kind,
            instruction=session.goal.instruction, **context,
        )

    def product_or_404(asin: str) -> Product:
        product = shop.product(asin)
        if product is None:
            abort(404)
        return product

    @app.errorhandler(404)
    def not_found(_: Exception) -> tuple[str, int]:
        sid = (request.view_args or {}).get("sid", "")
        sid = sid if SESSION_ID.fullmatch(sid or "") else ""
        return render_template("error.html", sid=sid, page_kind="error", message="Not found"), 404

    @app.get("/")
    def index() -> Response:
        return redirect(search_url(secrets.token_hex(8)))

    @app.get("/<sid>")
    def search_page(sid: str) -> str:
        sid = _session_id(sid)
        if "goal" in request.args or "split" in request.args:
            try:
                session = sessions.start(
                    sid, request.args.get("split", "train"), int(request.args.get("goal", "0"))
                )
            except ValueError:
                abort(400)
        else:
            session = sessions.get_or_start(sid)
        return page("search.html", session, "search", results_action=f"/{sid}/results")

    @app.get("/<sid>/results")
    def results(sid: str) -> str | Response:
        session = sessions.get_or_start(_session_id(sid))
        keywords, number = _keywords(), _page_number()
        if not keywords:
            return redirect(search_url(sid))
        found = shop.search(keywords)
        start = (number - 1) * PRODUCTS_PER_PAGE
        hits = [
            {
                "asin": p.asin,
                "title": p.title,
                "price": shown_price(p),
                "href": item_url(sid, p.asin, keywords, number, {}),
            }
            for p in found[start : start + PRODUCTS_PER_PAGE]
        ]
        return page(
            "results.html", session, "results", keywords=keywords, page=number,
            total=len(found), hits=hits, search_href=search_url(sid),
            prev_href=results_url(sid, keywords, number - 1) if number > 1 else None,
            next_href=results_url(sid, keywords, number + 1),
        )

    @app.get("/<sid>/item/<asin>")
    def item(sid: str, asin: str) -> str:
        session = sessions.get_or_start(_session_id(sid))
        product = product_or_404(asin)
        keywords, number = _keywords(), _page_number()
        chosen = _valid_options(product, decode_options(request.args.get("options")))
        groups = [
            {
                "name": name,
                "choices": [
                    {
                        "value": value,
                        "selected": chosen.get(name) == value,
                        "href": item_url(sid, product.asin, keywords, number,
                                         {**chosen, name: value}),
                    }
                    for value in values
                ],
            }
            for name, values in product.options.items()
        ]
        tabs = {sub: item_url(sid, product.asin, keywords, number, chosen, sub)
                for sub in SUB_PAGES}
        prev = results_url(sid, keywords, number) if keywords else search_url(sid)
        return page(
            "item.html", session, "item", product=product, price=shown_price(product),
            rating=product.rating if extended else "N.A.", option_groups=groups, tabs=tabs,
            search_href=search_url(sid), prev_href=prev,
            buy_action=buy_url(sid, product.asin), options_json=encode_options(chosen),
        )

    @app.get("/<sid>/item/<asin>/<sub>")
    def sub_page(sid: str, asin: str, sub: str) -> str:
        session = sessions.get_or_start(_session_id(sid))
        product = product_or_404(asin)
        if sub not in SUB_PAGES:
            abort(404)
        keywords, number = _keywords(), _page_number()
        chosen = _valid_options(product, decode_options(request.args.get("options")))
        return page(
            "sub_page.html", session, sub, product=product, sub=sub,
            reviews=product.reviews if extended else (), search_href=search_url(sid),
            prev_href=item_url(sid, product.asin, keywords, number, chosen),
        )

    @app.post("/<sid>/buy/<asin>")
    def buy(sid: str, asin: str) -> Response:
        session = sessions.get_or_start(_session_id(sid))
        product = product_or_404(asin)
        chosen = _valid_options(product, decode_options(request.form.get("options")))
        sessions.buy(session, product, chosen)
        return redirect(done_url(sid), code=303)

    @app.get("/<sid>/done")
    def done(sid: str) -> str | Response:
        session = sessions.get(_session_id(sid))
        if session is None or session.purchase is None:
            return redirect(search_url(sid))
        bought = session.purchase
        return page(
            "done.html", session, "done", product=bought.product,
            options=list(bought.options.items()), price=format_price(bought.product.price),
            score=round(bought.breakdown.score, 4),
        )

    @app.get("/api/shop")
    def api_shop() -> Response:
        settings = {"reward": sessions.reward, "pages": pages, "noun_tagger": noun_tagger()}
        return jsonify({**shop.describe(), **settings})

    @app.get("/api/sessions/<sid>")
    def api_session(sid: str) -> Response:
        session = sessions.get(_session_id(sid))
        if session is None:
            abort(404)
        return jsonify(session.to_dict())

    return app


_APPS: dict[tuple[int, str, str], Flask] = {}
_LOCK = threading.Lock()


def get_app(shop: Shop, reward: str = DEFAULT_REWARD, pages: str = DEFAULT_PAGES) -> Flask:
    """The process's app for ``shop`` with these settings (created on first use)."""
    key = (id(shop), check_reward(reward), check_pages(pages))
    with _LOCK:
        if key not in _APPS:
            _APPS[key] = create_app(shop, reward=reward, pages=pages)
        return _APPS[key]
